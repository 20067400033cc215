package terdutdouble

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// clock is a settable clock for the double.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestRateLimit(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, _, url := serve(t, Options{AdminKey: "tdk_admin", Now: clk.now, RateLimit: RateLimit{RPS: 3, RetryAfter: 2}})
	get := func() (int, http.Header) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/api/users", nil)
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = rsp.Body.Close()
		return rsp.StatusCode, rsp.Header
	}
	codes := make([]int, 0, 5)
	for range 5 {
		code, h := get()
		codes = append(codes, code)
		if p := h.Get("Ratelimit-Policy"); p != "3;w=1" {
			t.Errorf("RateLimit-Policy %q, want the stated limit 3;w=1", p)
		}
		if code == http.StatusTooManyRequests && h.Get("Retry-After") != "2" {
			t.Errorf("a 429 without Retry-After 2")
		}
	}
	// Three within the second (401 without a key), then two refused.
	if want := []int{401, 401, 401, 429, 429}; !equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	clk.t = clk.t.Add(time.Second)
	if code, _ := get(); code == http.StatusTooManyRequests {
		t.Error("a second later the bucket is still empty")
	}
	if st := s.Rate(); st.Requests != 6 || st.Throttled != 2 || st.MaxPerSecond != 5 || st.Limit != 3 {
		t.Errorf("Rate() = %+v", st)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStormFaults: a fault with a probability hits about that share of the
// requests, and one with For ends on its own.
func TestStormFaults(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, c, _ := serve(t, Options{AdminKey: "tdk_admin", Now: clk.now})
	s.AddFault(Fault{Status: http.StatusServiceUnavailable, Probability: 0.5, For: Duration(time.Minute)})
	failed := 0
	for range 400 {
		if _, err := c.ListUsers(t.Context()); err != nil {
			failed++
		}
	}
	if failed < 120 || failed > 280 {
		t.Errorf("%d of 400 requests failed with p=0.5", failed)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	if _, err := c.ListUsers(t.Context()); err != nil {
		t.Errorf("after the storm's minute: %v", err)
	}
}

// TestIngest: an integration's URL takes Alertmanager's payload with the
// integration's key only; malformed input is a 400, never a 500.
func TestIngest(t *testing.T) {
	s, c, _ := serve(t, Options{AdminKey: "tdk_admin"})
	tm, _ := c.CreateTeam(t.Context(), "Platform")
	in, err := c.CreateIntegration(t.Context(), tm.ID, "alertmanager", "am")
	if err != nil {
		t.Fatal(err)
	}
	post := func(url, key, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rsp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = rsp.Body.Close()
		return rsp.StatusCode
	}
	payload := `{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"Watchdog"}},{"labels":{"alertname":"Disk"}}]}`
	if code := post(in.URL.Reveal(), in.Key.Reveal(), payload); code != http.StatusAccepted {
		t.Errorf("with its key: %d, want 202", code)
	}
	if code := post(in.URL.Reveal(), "tdi_wrong", payload); code != http.StatusUnauthorized {
		t.Errorf("with a wrong key: %d, want 401", code)
	}
	if code := post(in.URL.Reveal(), in.Key.Reveal(), `{"version":`); code != http.StatusBadRequest {
		t.Errorf("malformed: %d, want 400", code)
	}
	if code := post(strings.TrimSuffix(in.URL.Reveal(), "0")+"x", in.Key.Reveal(), payload); code != http.StatusNotFound {
		t.Errorf("unknown URL: %d, want 404", code)
	}
	if got := s.Alerts(); len(got) != 1 || got[0].Notifications != 1 || got[0].Alerts != 2 || got[0].Refused != 1 {
		t.Errorf("Alerts() = %+v, want 1 notification of 2 alerts and 1 refused", got)
	}
	if v := s.Verify(in.Key.Reveal()); !v.Valid || v.Kind != "integration" || v.ID != in.ID {
		t.Errorf("Verify(integration key) = %+v", v)
	}
	_ = c.DeleteIntegration(t.Context(), tm.ID, in.ID)
	if v := s.Verify(in.Key.Reveal()); v.Valid {
		t.Error("a deleted integration's key still verifies")
	}
}

// TestKeysRecordUse: every minted key is listed, without the key, with
// whether it was ever used and whether it is still valid.
func TestKeysRecordUse(t *testing.T) {
	s, c, url := serve(t, Options{AdminKey: "tdk_admin"})
	acct, _ := c.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "ci", Scope: terdut.ScopeInstance})
	used, _ := c.MintKey(t.Context(), acct.ID)
	unused, _ := c.MintKey(t.Context(), acct.ID)
	uc, _ := terdut.New(terdut.Options{Endpoint: url, Token: used.Key})
	_, _ = uc.ListUsers(t.Context())
	_ = c.RevokeKey(t.Context(), acct.ID, used.ID)
	keys := s.Keys()
	if len(keys) != 2 || !keys[0].Used || keys[0].Valid || keys[1].Used || !keys[1].Valid {
		t.Errorf("Keys() = %+v, want the first used and revoked, the second unused and valid", keys)
	}
	var buf bytes.Buffer
	for _, k := range keys {
		buf.WriteString(k.Scope)
	}
	if strings.Contains(buf.String(), unused.Key.Reveal()) {
		t.Error("a key record holds the key")
	}
}
