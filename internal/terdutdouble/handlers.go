package terdutdouble

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
	// An integration's webhook URL; its key is the integration's, not an
	// API key (alerts.go).
	s.api.HandleFunc("POST /api/alerts/{token}", s.ingest)

	s.handle("GET /api/users", anyKey, s.listUsers)
	s.handle("DELETE /api/users/{id}/api-keys/{kid}", instanceOnly, s.revokeUserKey)
	s.handle("GET /api/service-accounts", instanceOnly, s.listAccounts)
	s.handle("POST /api/service-accounts", instanceOnly, s.createAccount)
	s.handle("DELETE /api/service-accounts/{id}", instanceOnly, s.deleteAccount)
	s.handle("GET /api/service-accounts/{id}/keys", instanceOnly, s.listKeys)
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
		p.used = true
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

// revokeUserKey revokes one API key of a user (the bootstrap admin's).
func (s *Server) revokeUserKey(w http.ResponseWriter, r *http.Request, _ *principal) {
	uid, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	kid, ok := pathID(w, r, "kid")
	if !ok {
		return
	}
	for raw, p := range s.keys {
		if p.userID == uid && p.keyID == kid && p.accountID == 0 {
			delete(s.keys, raw)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusNotFound, "key not found")
}

func (s *Server) listUsers(w http.ResponseWriter, _ *http.Request, _ *principal) {
	writeJSON(w, http.StatusOK, listed(s, sortedValues(s.users)))
}

func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request, _ *principal) {
	name := r.URL.Query().Get("name")
	out := []terdut.ServiceAccount{}
	for _, a := range sortedValues(s.accounts) {
		if name == "" || a.Name == name {
			out = append(out, a.ServiceAccount)
		}
	}
	writeJSON(w, http.StatusOK, listed(s, out))
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
	a, ok := s.pathAccount(w, r)
	if !ok {
		return
	}
	s.deleteAccountLocked(a)
	w.WriteHeader(http.StatusNoContent)
}

// pathAccount is the account the request's {id} names; it answers 400 or
// 404 itself when there is none.
func (s *Server) pathAccount(w http.ResponseWriter, r *http.Request) (*account, bool) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return nil, false
	}
	a, found := s.accounts[id]
	if !found {
		writeError(w, http.StatusNotFound, "service account not found")
	}
	return a, found
}

func (s *Server) deleteAccountLocked(a *account) {
	for _, raw := range a.keys {
		delete(s.keys, raw)
	}
	delete(s.accounts, a.ID)
}

func (s *Server) mintKey(w http.ResponseWriter, r *http.Request, _ *principal) {
	a, ok := s.pathAccount(w, r)
	if !ok {
		return
	}
	raw := s.secret("tdk_")
	kid := s.id()
	a.keys[kid] = raw
	p := &principal{keyID: kid, accountID: a.ID, scope: a.Scope, created: s.now().UTC()}
	if a.TeamID != nil {
		p.teamID = *a.TeamID
	}
	s.keys[raw] = p
	s.minted = append(s.minted, p)
	writeJSON(w, http.StatusCreated, terdut.APIKey{ID: kid, Key: terdut.Secret(raw), CreatedAt: p.created})
}

// listKeys lists an account's valid keys, without their raw values.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, _ *principal) {
	a, ok := s.pathAccount(w, r)
	if !ok {
		return
	}
	out := []terdut.APIKey{}
	for _, kid := range slices.Sorted(maps.Keys(a.keys)) {
		out = append(out, terdut.APIKey{ID: kid, CreatedAt: s.keys[a.keys[kid]].created})
	}
	writeJSON(w, http.StatusOK, listed(s, out))
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, _ *principal) {
	kid, ok := pathID(w, r, "kid")
	if !ok {
		return
	}
	a, ok := s.pathAccount(w, r)
	if !ok {
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
