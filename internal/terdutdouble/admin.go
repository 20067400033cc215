package terdutdouble

import (
	"maps"
	"net/http"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// State is a snapshot of the double's objects, without any secret.
type State struct {
	Users           []terdut.User                     `json:"users"`
	Teams           []terdut.Team                     `json:"teams"`
	Policies        map[int64]terdut.EscalationPolicy `json:"policies"`
	Switches        []StateSwitch                     `json:"switches"`
	Integrations    []StateIntegration                `json:"integrations"`
	ServiceAccounts []StateAccount                    `json:"serviceAccounts"`
}

// StateSwitch is a switch with its team.
type StateSwitch struct {
	terdut.DeadmanSwitch

	TeamID int64 `json:"teamId"`
}

// StateIntegration is an integration with its team, without url or key.
type StateIntegration struct {
	terdut.Integration

	TeamID int64 `json:"teamId"`
}

// StateAccount is a service account with the IDs of its live keys.
type StateAccount struct {
	terdut.ServiceAccount

	KeyIDs []int64 `json:"keyIds"`
}

// Snapshot returns the double's objects.
func (s *Server) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{
		Users:        sortedValues(s.users),
		Teams:        sortedValues(s.teams),
		Policies:     map[int64]terdut.EscalationPolicy{},
		Switches:     []StateSwitch{},
		Integrations: []StateIntegration{},
	}
	maps.Copy(st.Policies, s.policies)
	for _, sw := range sortedValues(s.switches) {
		st.Switches = append(st.Switches, StateSwitch{TeamID: sw.teamID, DeadmanSwitch: sw.DeadmanSwitch})
	}
	for _, in := range sortedValues(s.integrations) {
		v := in.Integration
		v.URL, v.Key = "", ""
		st.Integrations = append(st.Integrations, StateIntegration{TeamID: in.teamID, Integration: v})
	}
	for _, a := range sortedValues(s.accounts) {
		sa := StateAccount{ServiceAccount: a.ServiceAccount, KeyIDs: []int64{}}
		for kid := range a.keys {
			sa.KeyIDs = append(sa.KeyIDs, kid)
		}
		st.ServiceAccounts = append(st.ServiceAccounts, sa)
	}
	return st
}

// adminRoutes serves /admin/: counters, faults, users and state. It has no
// auth: the double is a test tool bound to loopback.
func (s *Server) adminRoutes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /admin/counters", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Counters()) })
	m.HandleFunc("GET /admin/paths", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.PathCounters()) })
	m.HandleFunc("DELETE /admin/counters", func(w http.ResponseWriter, _ *http.Request) {
		s.ResetCounters()
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("POST /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		if !readJSON(w, r, &f) {
			return
		}
		s.AddFault(f)
		writeJSON(w, http.StatusCreated, f)
	})
	m.HandleFunc("DELETE /admin/faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("PUT /admin/not-found-after-create", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			Duration Duration `json:"duration"`
		}
		if !readJSON(w, r, &d) {
			return
		}
		s.SetNotFoundAfterCreate(time.Duration(d.Duration))
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("PUT /admin/quirks", func(w http.ResponseWriter, r *http.Request) {
		var q Quirks
		if readJSON(w, r, &q) {
			s.SetQuirks(q)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	m.HandleFunc("POST /admin/users", func(w http.ResponseWriter, r *http.Request) {
		var u terdut.User
		if !readJSON(w, r, &u) {
			return
		}
		if u.Username == "" {
			writeError(w, http.StatusBadRequest, "username is required")
			return
		}
		writeJSON(w, http.StatusCreated, s.AddUser(u.Username))
	})
	m.HandleFunc("POST /admin/hand-made", s.handMadeRoute)
	m.HandleFunc("GET /admin/state", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Snapshot()) })
	m.HandleFunc("GET /admin/bytes", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Bytes()) })
	m.HandleFunc("GET /admin/rate", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Rate()) })
	m.HandleFunc("PUT /admin/rate-limit", func(w http.ResponseWriter, r *http.Request) {
		var l RateLimit
		if readJSON(w, r, &l) {
			s.SetRateLimit(l)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	m.HandleFunc("PUT /admin/latency", func(w http.ResponseWriter, r *http.Request) {
		var d struct {
			Latency Duration `json:"latency"`
		}
		if readJSON(w, r, &d) {
			s.SetLatency(time.Duration(d.Latency))
			w.WriteHeader(http.StatusNoContent)
		}
	})
	m.HandleFunc("GET /admin/alerts", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Alerts()) })
	m.HandleFunc("GET /admin/keys", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Keys()) })
	// NOTE: the key travels in the body, never in the URL (which a proxy
	// or access log would keep).
	m.HandleFunc("POST /admin/verify", func(w http.ResponseWriter, r *http.Request) {
		var k struct {
			Key string `json:"key"`
		}
		if readJSON(w, r, &k) {
			writeJSON(w, http.StatusOK, s.Verify(k.Key))
		}
	})
	m.HandleFunc("GET /admin/scopes", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.CountsByScope()) })
	m.HandleFunc("GET /admin/issued", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Issued()) })
	s.admin = m
}
