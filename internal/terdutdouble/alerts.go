package terdutdouble

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// AlertCount is what one integration received on its webhook URL.
type AlertCount struct {
	IntegrationID int64 `json:"integrationId"`
	// Notifications is how many webhook posts were accepted, and Alerts how
	// many alerts they carried.
	Notifications int `json:"notifications"`
	Alerts        int `json:"alerts"`
	// Refused counts posts with a missing or wrong key.
	Refused int `json:"refused"`
}

// webhook is the part of Alertmanager's webhook payload the double reads.
// [assumed]: terdut-server's ingest accepts Alertmanager's webhook_configs
// payload as it is (version "4").
type webhook struct {
	Version string            `json:"version"`
	Status  string            `json:"status"`
	Alerts  []json.RawMessage `json:"alerts"`
}

// ingest is POST /api/alerts/{token}: an integration's webhook URL. It takes
// an Alertmanager webhook payload with the integration's key as the Bearer
// token, and counts it for that integration ([assumed] shape).
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	var body webhook
	if !readJSON(w, r, &body) {
		return
	}
	if body.Alerts == nil {
		writeError(w, http.StatusBadRequest, "not an Alertmanager webhook payload: no alerts")
		return
	}
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	in, found := s.integrationByURLLocked(r.PathValue("token"))
	if !found {
		writeError(w, http.StatusNotFound, "no such integration")
		return
	}
	c := s.alerts[in.ID]
	if c == nil {
		c = &AlertCount{IntegrationID: in.ID}
		s.alerts[in.ID] = c
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(in.Key.Reveal())) != 1 {
		c.Refused++
		writeError(w, http.StatusUnauthorized, "wrong integration key")
		return
	}
	c.Notifications++
	c.Alerts += len(body.Alerts)
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) integrationByURLLocked(token string) (ownedIntegration, bool) {
	if token == "" {
		return ownedIntegration{}, false
	}
	for _, in := range s.integrations {
		if strings.HasSuffix(in.URL.Reveal(), "/api/alerts/"+token) {
			return in, true
		}
	}
	return ownedIntegration{}, false
}

// Alerts returns what each integration received, by integration ID.
func (s *Server) Alerts() []AlertCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AlertCount, 0, len(s.alerts))
	for _, c := range s.alerts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b AlertCount) int { return int(a.IntegrationID - b.IntegrationID) })
	return out
}

// KeyRecord is one service-account key the double minted, without the key.
type KeyRecord struct {
	ID        int64  `json:"id"`
	AccountID int64  `json:"accountId"`
	Scope     string `json:"scope"`
	TeamID    int64  `json:"teamId,omitempty"`
	// Used: a request authenticated with it. Valid: it is not revoked.
	Used  bool `json:"used"`
	Valid bool `json:"valid"`
}

// Keys returns every service-account key ever minted.
func (s *Server) Keys() []KeyRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	valid := map[*principal]bool{}
	for _, p := range s.keys {
		valid[p] = true
	}
	out := make([]KeyRecord, 0, len(s.minted))
	for _, p := range s.minted {
		out = append(out, KeyRecord{ID: p.keyID, AccountID: p.accountID, Scope: p.scope, TeamID: p.teamID, Used: p.used, Valid: valid[p]})
	}
	return out
}

// Verdict says whether a key (an API key or an integration's) is one the
// server accepts, and whose it is.
type Verdict struct {
	Valid bool   `json:"valid"`
	Kind  string `json:"kind,omitempty"` // "api" or "integration"
	ID    int64  `json:"id,omitempty"`   // the key's or the integration's ID
}

// UserKeys counts the valid API keys of users (the bootstrap admin's), as
// opposed to service accounts' keys.
func (s *Server) UserKeys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.keys {
		if p.userID != 0 && p.accountID == 0 {
			n++
		}
	}
	return n
}

// Verify says whether the server accepts key.
func (s *Server) Verify(key string) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.keys[key]; ok {
		return Verdict{Valid: true, Kind: "api", ID: p.keyID}
	}
	for _, in := range s.integrations {
		if subtle.ConstantTimeCompare([]byte(key), []byte(in.Key.Reveal())) == 1 {
			return Verdict{Valid: true, Kind: "integration", ID: in.ID}
		}
	}
	return Verdict{}
}
