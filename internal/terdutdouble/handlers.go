package terdutdouble

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

type handler func(w http.ResponseWriter, r *http.Request, p *principal)

// access says who may call a route.
type access int

const (
	// anyKey: every valid key, team-scoped ones included.
	anyKey access = iota
	// instanceOnly: the bootstrap admin or an instance-scoped key.
	instanceOnly
	// ownTeam: instance keys, or a team key whose team is {id}.
	ownTeam
)

func (s *Server) routes() {
	s.api = http.NewServeMux()
	s.api.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.api.HandleFunc("POST /api/bootstrap", s.bootstrap)

	s.handle("GET /api/users", anyKey, s.listUsers)
	s.handle("GET /api/service-accounts", instanceOnly, s.listAccounts)
	s.handle("POST /api/service-accounts", instanceOnly, s.createAccount)
	s.handle("DELETE /api/service-accounts/{id}", instanceOnly, s.deleteAccount)
	s.handle("POST /api/service-accounts/{id}/keys", instanceOnly, s.mintKey)
	s.handle("DELETE /api/service-accounts/{id}/keys/{kid}", instanceOnly, s.revokeKey)

	s.handle("GET /api/teams", instanceOnly, s.listTeams)
	s.handle("POST /api/teams", instanceOnly, s.createTeam)
	s.handle("GET /api/teams/{id}", instanceOnly, s.getTeam)
	s.handle("PUT /api/teams/{id}", instanceOnly, s.renameTeam)
	s.handle("DELETE /api/teams/{id}", instanceOnly, s.deleteTeam)
	s.handle("PUT /api/teams/{id}/oidc-groups", ownTeam, s.setOIDCGroups)
	s.handle("GET /api/teams/{id}/escalation", ownTeam, s.getPolicy)
	s.handle("PUT /api/teams/{id}/escalation", ownTeam, s.putPolicy)
	s.handle("GET /api/teams/{id}/deadman/switches", ownTeam, s.listSwitches)
	s.handle("POST /api/teams/{id}/deadman/switches", ownTeam, s.createSwitch)
	s.handle("PUT /api/teams/{id}/deadman/switches/{sid}", ownTeam, s.updateSwitch)
	s.handle("DELETE /api/teams/{id}/deadman/switches/{sid}", ownTeam, s.deleteSwitch)
	s.handle("GET /api/teams/{id}/integrations", ownTeam, s.listIntegrations)
	s.handle("POST /api/teams/{id}/integrations", ownTeam, s.createIntegration)
	s.handle("PATCH /api/teams/{id}/integrations/{iid}", ownTeam, s.renameIntegration)
	s.handle("DELETE /api/teams/{id}/integrations/{iid}", ownTeam, s.deleteIntegration)

	s.adminRoutes()
}

// handle registers h behind authentication and the route's access rule. It
// holds the server's lock for the handler's whole run.
func (s *Server) handle(pattern string, a access, h handler) {
	s.api.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		defer s.mu.Unlock()
		p := s.keys[strings.TrimSpace(raw)]
		if !ok || p == nil {
			writeError(w, http.StatusUnauthorized, "unauthorized")
			return
		}
		scope := p.scope
		if scope == "" {
			scope = "admin"
		}
		if s.byScope[pattern] == nil {
			s.byScope[pattern] = map[string]int{}
		}
		s.byScope[pattern][scope]++
		if p.scope == terdut.ScopeTeam {
			if a != anyKey && (a != ownTeam || r.PathValue("id") != strconv.FormatInt(p.teamID, 10)) {
				writeError(w, http.StatusForbidden, "team-scoped key outside its team")
				return
			}
		}
		h(w, r, p)
	})
}

func (s *Server) bootstrap(w http.ResponseWriter, r *http.Request) {
	var req terdut.BootstrapRequest
	if !readJSON(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.users) > 0 {
		writeError(w, http.StatusForbidden, "already bootstrapped")
		return
	}
	if req.Username == "" {
		req.Username = "admin"
	}
	u := s.addUserLocked(req.Username, req.Email)
	raw := s.secret("tdk_")
	kid := s.id()
	s.keys[raw] = &principal{keyID: kid, userID: u.ID}
	writeJSON(w, http.StatusCreated, terdut.BootstrapResponse{User: u, APIKey: terdut.APIKey{ID: kid, Key: terdut.Secret(raw), CreatedAt: s.now().UTC()}})
}

func (s *Server) listUsers(w http.ResponseWriter, _ *http.Request, _ *principal) {
	writeJSON(w, http.StatusOK, sortedValues(s.users))
}

func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request, _ *principal) {
	name := r.URL.Query().Get("name")
	out := []terdut.ServiceAccount{}
	for _, a := range sortedValues(s.accounts) {
		if name == "" || a.Name == name {
			out = append(out, a.ServiceAccount)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createAccount(w http.ResponseWriter, r *http.Request, _ *principal) {
	var req terdut.ServiceAccount
	if !readJSON(w, r, &req) {
		return
	}
	if req.Name == "" {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	switch req.Scope {
	case terdut.ScopeInstance:
		req.TeamID = nil
	case terdut.ScopeTeam:
		if req.TeamID == nil {
			writeError(w, http.StatusBadRequest, "team_id is required for scope team")
			return
		}
		if _, ok := s.teams[*req.TeamID]; !ok {
			writeError(w, http.StatusBadRequest, "unknown team_id")
			return
		}
	default:
		writeError(w, http.StatusBadRequest, "scope must be instance or team")
		return
	}
	for _, a := range s.accounts {
		if a.Name == req.Name {
			writeError(w, http.StatusConflict, "service account name already exists")
			return
		}
	}
	req.ID = s.id()
	s.accounts[req.ID] = &account{ServiceAccount: req, keys: map[int64]string{}}
	s.markCreatedLocked(req.ID)
	writeJSON(w, http.StatusCreated, req)
}

func (s *Server) deleteAccount(w http.ResponseWriter, r *http.Request, _ *principal) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	a, found := s.accounts[id]
	if !found {
		writeError(w, http.StatusNotFound, "service account not found")
		return
	}
	s.deleteAccountLocked(a)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteAccountLocked(a *account) {
	for _, raw := range a.keys {
		delete(s.keys, raw)
	}
	delete(s.accounts, a.ID)
}

func (s *Server) mintKey(w http.ResponseWriter, r *http.Request, _ *principal) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	a, found := s.accounts[id]
	if !found {
		writeError(w, http.StatusNotFound, "service account not found")
		return
	}
	raw := s.secret("tdk_")
	kid := s.id()
	a.keys[kid] = raw
	p := &principal{keyID: kid, accountID: a.ID, scope: a.Scope}
	if a.TeamID != nil {
		p.teamID = *a.TeamID
	}
	s.keys[raw] = p
	writeJSON(w, http.StatusCreated, terdut.APIKey{ID: kid, Key: terdut.Secret(raw), CreatedAt: s.now().UTC()})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, _ *principal) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	kid, ok := pathID(w, r, "kid")
	if !ok {
		return
	}
	a, found := s.accounts[id]
	if !found {
		writeError(w, http.StatusNotFound, "service account not found")
		return
	}
	raw, found := a.keys[kid]
	if !found {
		writeError(w, http.StatusNotFound, "key not found")
		return
	}
	delete(a.keys, kid)
	delete(s.keys, raw)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listTeams(w http.ResponseWriter, r *http.Request, _ *principal) {
	name := r.URL.Query().Get("name")
	out := []terdut.Team{}
	for _, t := range sortedValues(s.teams) {
		if (name == "" || t.Name == name) && !s.hiddenLocked(t.ID) {
			out = append(out, t)
		}
	}
	writeJSON(w, http.StatusOK, out)
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
		writeJSON(w, http.StatusOK, t)
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
// team-scoped service accounts and their keys included.
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
		if a.TeamID != nil && *a.TeamID == id {
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
	p := s.policies[t.ID]
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
	s.policies[t.ID] = p
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) listSwitches(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	out := []terdut.DeadmanSwitch{}
	for _, sw := range sortedValues(s.switches) {
		if sw.teamID == t.ID && !s.hiddenLocked(sw.ID) {
			out = append(out, sw.DeadmanSwitch)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// validSwitch checks a switch body and derives its name when empty.
func validSwitch(w http.ResponseWriter, sw *terdut.DeadmanSwitch) bool {
	if strings.TrimSpace(sw.Matcher) == "" {
		writeError(w, http.StatusBadRequest, "matcher is required")
		return false
	}
	if !validDuration(sw.Timeout) {
		writeError(w, http.StatusBadRequest, "invalid timeout")
		return false
	}
	if sw.Name == "" {
		sw.Name = terdut.CanonicalMatcher(sw.Matcher)
	}
	return true
}

func (s *Server) createSwitch(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	var sw terdut.DeadmanSwitch
	if !readJSON(w, r, &sw) || !validSwitch(w, &sw) {
		return
	}
	sw.ID = s.id()
	s.switches[sw.ID] = ownedSwitch{teamID: t.ID, DeadmanSwitch: sw}
	s.markCreatedLocked(sw.ID)
	writeJSON(w, http.StatusCreated, sw)
}

func (s *Server) teamSwitch(w http.ResponseWriter, r *http.Request) (ownedSwitch, bool) {
	t, ok := s.team(w, r)
	if !ok {
		return ownedSwitch{}, false
	}
	sid, ok := pathID(w, r, "sid")
	if !ok {
		return ownedSwitch{}, false
	}
	sw, found := s.switches[sid]
	if !found || sw.teamID != t.ID {
		writeError(w, http.StatusNotFound, "switch not found")
		return ownedSwitch{}, false
	}
	return sw, true
}

func (s *Server) updateSwitch(w http.ResponseWriter, r *http.Request, _ *principal) {
	cur, ok := s.teamSwitch(w, r)
	if !ok {
		return
	}
	var sw terdut.DeadmanSwitch
	if !readJSON(w, r, &sw) || !validSwitch(w, &sw) {
		return
	}
	sw.ID = cur.ID
	s.switches[sw.ID] = ownedSwitch{teamID: cur.teamID, DeadmanSwitch: sw}
	writeJSON(w, http.StatusOK, sw)
}

func (s *Server) deleteSwitch(w http.ResponseWriter, r *http.Request, _ *principal) {
	if sw, ok := s.teamSwitch(w, r); ok {
		delete(s.switches, sw.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) listIntegrations(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	out := []terdut.Integration{}
	for _, in := range sortedValues(s.integrations) {
		if in.teamID == t.ID && !s.hiddenLocked(in.ID) {
			v := in.Integration
			v.URL, v.Key = "", ""
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func validIntegrationKind(k string) bool {
	switch k {
	case terdut.IntegrationAlertmanager, terdut.IntegrationGrafana, terdut.IntegrationWebhook:
		return true
	}
	return false
}

func (s *Server) createIntegration(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	var req terdut.Integration
	if !readJSON(w, r, &req) {
		return
	}
	if !validIntegrationKind(req.Kind) {
		writeError(w, http.StatusBadRequest, "invalid integration kind")
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	in := terdut.Integration{ID: s.id(), Kind: req.Kind, Name: req.Name}
	in.URL = terdut.Secret("http://" + r.Host + "/api/alerts/" + s.secret("tdu_"))
	s.issued = append(s.issued, in.URL.Reveal())
	in.Key = terdut.Secret(s.secret("tdi_"))
	s.integrations[in.ID] = ownedIntegration{teamID: t.ID, Integration: in}
	s.markCreatedLocked(in.ID)
	writeJSON(w, http.StatusCreated, in)
}

func (s *Server) teamIntegration(w http.ResponseWriter, r *http.Request) (ownedIntegration, bool) {
	t, ok := s.team(w, r)
	if !ok {
		return ownedIntegration{}, false
	}
	iid, ok := pathID(w, r, "iid")
	if !ok {
		return ownedIntegration{}, false
	}
	in, found := s.integrations[iid]
	if !found || in.teamID != t.ID {
		writeError(w, http.StatusNotFound, "integration not found")
		return ownedIntegration{}, false
	}
	return in, true
}

func (s *Server) renameIntegration(w http.ResponseWriter, r *http.Request, _ *principal) {
	in, ok := s.teamIntegration(w, r)
	if !ok {
		return
	}
	var req terdut.Integration
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		writeError(w, http.StatusBadRequest, "name is required")
		return
	}
	in.Name = req.Name
	s.integrations[in.ID] = in
	v := in.Integration
	v.URL, v.Key = "", ""
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) deleteIntegration(w http.ResponseWriter, r *http.Request, _ *principal) {
	if in, ok := s.teamIntegration(w, r); ok {
		delete(s.integrations, in.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}
