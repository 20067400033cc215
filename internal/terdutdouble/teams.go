package terdutdouble

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

func (s *Server) listTeams(w http.ResponseWriter, r *http.Request, _ *principal) {
	name := r.URL.Query().Get("name")
	out := []terdut.Team{}
	for _, t := range sortedValues(s.teams) {
		t = seen(s, teamKey(t.ID), t)
		if (name == "" || t.Name == name) && !s.hiddenLocked(t.ID) {
			out = append(out, t)
		}
	}
	writeJSON(w, http.StatusOK, listed(s, out))
}

func (s *Server) teamNameTakenLocked(name string, except int64) bool {
	for _, t := range s.teams {
		if t.Name == name && t.ID != except {
			return true
		}
	}
	return false
}

func (s *Server) createTeam(w http.ResponseWriter, r *http.Request, _ *principal) {
	var req terdut.Team
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	if s.teamNameTakenLocked(req.Name, 0) {
		writeError(w, http.StatusConflict, "team name already exists")
		return
	}
	t := terdut.Team{ID: s.id(), Name: req.Name, CreatedAt: s.now().UTC()}
	s.teams[t.ID] = t
	s.markCreatedLocked(t.ID)
	writeJSON(w, http.StatusCreated, t)
}

// team looks up {id} and answers 404 itself when there is none.
func (s *Server) team(w http.ResponseWriter, r *http.Request) (terdut.Team, bool) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return terdut.Team{}, false
	}
	t, found := s.teams[id]
	if !found || s.hiddenLocked(id) {
		writeError(w, http.StatusNotFound, "team not found")
		return terdut.Team{}, false
	}
	return t, true
}

func (s *Server) getTeam(w http.ResponseWriter, r *http.Request, _ *principal) {
	if t, ok := s.team(w, r); ok {
		writeJSON(w, http.StatusOK, seen(s, teamKey(t.ID), t))
	}
}

func (s *Server) renameTeam(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	var req terdut.Team
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	if s.teamNameTakenLocked(req.Name, t.ID) {
		writeError(w, http.StatusConflict, "team name already exists")
		return
	}
	s.updatedLocked(teamKey(t.ID), t)
	t.Name = req.Name
	s.teams[t.ID] = t
	writeJSON(w, http.StatusOK, t)
}

func (s *Server) deleteTeam(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	s.deleteTeamLocked(t.ID)
	w.WriteHeader(http.StatusNoContent)
}

// deleteTeamLocked removes a team and every row scoped to it, its
// team-scoped service accounts and their keys included (unless the NoCascade
// quirk is on).
func (s *Server) deleteTeamLocked(id int64) {
	delete(s.teams, id)
	delete(s.policies, id)
	for sid, sw := range s.switches {
		if sw.teamID == id {
			delete(s.switches, sid)
		}
	}
	for iid, in := range s.integrations {
		if in.teamID == id {
			delete(s.integrations, iid)
		}
	}
	for _, a := range s.accounts {
		if a.TeamID != nil && *a.TeamID == id && !s.quirks.NoCascade {
			s.deleteAccountLocked(a)
		}
	}
}

func (s *Server) setOIDCGroups(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	var req terdut.OIDCGroups
	if !readJSON(w, r, &req) {
		return
	}
	t.OIDCMemberGroup, t.OIDCOwnerGroup = req.MemberGroup, req.OwnerGroup
	s.teams[t.ID] = t
	writeJSON(w, http.StatusOK, req)
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	p := seen(s, policyKey(t.ID), s.policies[t.ID])
	if p.Levels == nil {
		p.Levels = []terdut.EscalationLevel{}
	}
	writeJSON(w, http.StatusOK, p)
}

func validDuration(v string) bool {
	d, err := time.ParseDuration(v)
	return err == nil && d > 0
}

func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	var p terdut.EscalationPolicy
	if !readJSON(w, r, &p) {
		return
	}
	if p.RepeatCount < 0 {
		writeError(w, http.StatusBadRequest, "repeat_count must be >= 0")
		return
	}
	for _, l := range p.Levels {
		if !validDuration(l.Timeout) {
			writeError(w, http.StatusBadRequest, "invalid level timeout")
			return
		}
		for _, tg := range l.Targets {
			switch tg.Kind {
			case terdut.TargetOnCall:
			case terdut.TargetUser:
				if tg.UserID == nil {
					writeError(w, http.StatusBadRequest, "user target needs user_id")
					return
				}
				if _, found := s.users[*tg.UserID]; !found {
					writeError(w, http.StatusBadRequest, "unknown user_id")
					return
				}
			default:
				writeError(w, http.StatusBadRequest, "invalid target kind")
				return
			}
		}
	}
	s.updatedLocked(policyKey(t.ID), s.policies[t.ID])
	s.policies[t.ID] = p
	writeJSON(w, http.StatusOK, p)
}

func teamKey(id int64) string   { return "team/" + strconv.FormatInt(id, 10) }
func policyKey(id int64) string { return "policy/" + strconv.FormatInt(id, 10) }
