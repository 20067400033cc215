package terdutdouble

import (
	"net/http"
	"strconv"
	"strings"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

func (s *Server) listSwitches(w http.ResponseWriter, r *http.Request, _ *principal) {
	t, ok := s.team(w, r)
	if !ok {
		return
	}
	out := []terdut.DeadmanSwitch{}
	for _, sw := range sortedValues(s.switches) {
		if sw.teamID == t.ID && !s.hiddenLocked(sw.ID) {
			out = append(out, seen(s, switchKey(sw.ID), sw.DeadmanSwitch))
		}
	}
	writeJSON(w, http.StatusOK, listed(s, out))
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
	sw.ID, sw.CreatedAt = s.id(), s.now().UTC()
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
	sw.ID, sw.CreatedAt = cur.ID, cur.CreatedAt
	s.updatedLocked(switchKey(sw.ID), cur.DeadmanSwitch)
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
			v := seen(s, integrationKey(in.ID), in.Integration)
			v.URL, v.Key = "", ""
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, listed(s, out))
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
	in := terdut.Integration{ID: s.id(), Kind: req.Kind, Name: req.Name, CreatedAt: s.now().UTC()}
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
	s.updatedLocked(integrationKey(in.ID), in.Integration)
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

func switchKey(id int64) string      { return "switch/" + strconv.FormatInt(id, 10) }
func integrationKey(id int64) string { return "integration/" + strconv.FormatInt(id, 10) }
