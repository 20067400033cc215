package terdutdouble

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	pathpkg "path"
	"reflect"
	"strings"
	"testing"
)

// FuzzHandlers: whatever a client sends (method, path, body, key), the
// double neither panics nor answers 500: malformed input is a clear 4xx.
func FuzzHandlers(f *testing.F) {
	corpus := []struct {
		method, path, body string
		auth               uint8
	}{
		{"POST", "/api/teams", `{"name":"Platform"}`, 1},
		{"POST", "/api/teams", `{"name":`, 1},
		{"PUT", "/api/teams/1/escalation", `{"repeat_count":-1,"levels":[{"timeout":"x"}]}`, 1},
		{"PUT", "/api/teams/1/escalation", `{"levels":[{"timeout":"5m","targets":[{"kind":"user"}]}]}`, 1},
		{"POST", "/api/teams/1/deadman/switches", `{"matcher":"","timeout":"0s"}`, 1},
		{"POST", "/api/service-accounts", `{"name":"x","scope":"team","team_id":99}`, 1},
		{"DELETE", "/api/service-accounts/abc/keys/1", ``, 1},
		{"POST", "/api/alerts/tdu_x", `{"alerts":null}`, 0},
		{"POST", "/api/bootstrap", `[]`, 0},
		{"PUT", "/admin/rate-limit", `{"rps":"many"}`, 0},
		{"POST", "/admin/faults", `{"status":-5,"probability":2}`, 0},
		{"POST", "/admin/verify", `{"key":1}`, 0},
		{"GET", "/api/teams/99999999999999999999", ``, 2},
		{"POST", "/api/teams", `{"name":"Intruder"}`, 2},
		{"DELETE", "/api/teams/1", ``, 0},
	}
	for _, s := range corpus {
		f.Add(s.method, s.path, s.body, s.auth)
	}
	f.Fuzz(func(t *testing.T, method, path, body string, auth uint8) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		s := New(Options{AdminKey: "tdk_admin", Users: []string{"alice"}})
		// A team and an integration to aim at.
		setup := httptest.NewRecorder()
		s.Handler().ServeHTTP(setup, request(t, "POST", "/api/teams", `{"name":"Platform"}`, "tdk_admin"))
		req := request(t, method, path, body, []string{"", "tdk_admin", "tdk_wrong"}[int(auth)%3])
		if req == nil {
			return
		}
		before := s.Snapshot()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q answered %d: %s", method, path, body, rec.Code, rec.Body.String())
		}
		// Without a key the server issued, the API answers 401 and
		// changes nothing (bootstrap and the alert webhook aside: they
		// take no API key).
		clean := pathpkg.Clean(req.URL.Path)
		open := clean == "/api/bootstrap" || strings.HasPrefix(clean, "/api/alerts/")
		if auth%3 != 1 && strings.HasPrefix(clean, "/api/") && clean == req.URL.Path && !open {
			if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
				t.Fatalf("%s %s without the admin key answered %d, want 401", method, path, rec.Code)
			}
			if after := s.Snapshot(); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s %s %q without the admin key changed the server's state", method, path, body)
			}
		}
	})
}

// request builds a request, or nil for a method or path no client could send.
func request(t *testing.T, method, path, body, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://127.0.0.1"+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}
