package terdut

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzAnswers: whatever a server answers (status, body, rate headers), no
// client call panics, an error status is an *APIError with that status, and
// no error carries the key.
func FuzzAnswers(f *testing.F) {
	f.Add(uint8(0), 200, []byte(`[{"id":1,"name":"x"}]`), "", "")
	f.Add(uint8(3), 200, []byte(`{"id":"not a number"}`), "", "")
	f.Add(uint8(5), 404, []byte(`{"error":"team not found"}`), "", "")
	f.Add(uint8(7), 429, []byte(``), "2", "20;w=1")
	f.Add(uint8(9), 500, []byte(`<html>oops</html>`), "junk", "0.5;w=x")
	f.Add(uint8(11), 201, []byte(`{"id":5,"key":"tdi_x","url":"http://u"}`), "", "")
	f.Add(uint8(2), 200, []byte(`null`), "", "")
	f.Fuzz(func(t *testing.T, call uint8, code int, body []byte, retry, policy string) {
		if code < 200 || code > 599 {
			code = 200 + (code%400+400)%400
		}
		const key = "tdk_fuzzing_secret_key"
		// Header values only as HTTP can carry them: a malformed header is
		// a broken answer (a transport error), not the server's word.
		retry, policy = printable(retry), printable(policy)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", retry)
			w.Header().Set(headerRateLimitPolicy, policy)
			w.WriteHeader(code)
			_, _ = w.Write(body)
		}))
		defer srv.Close()
		c, err := New(Options{Endpoint: srv.URL, Token: key, MaxRetries: -1, Timeout: 2 * time.Second, ListMaxAge: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		calls := []func() error{
			func() error { _, err := c.ListUsers(ctx); return err },
			func() error { _, err := c.GetTeam(ctx, 1); return err },
			func() error { _, err := c.GetTeamByName(ctx, "x"); return err },
			func() error { _, err := c.CreateTeam(ctx, "x"); return err },
			func() error { _, err := c.GetEscalationPolicy(ctx, 1); return err },
			func() error { _, err := c.ListDeadmanSwitches(ctx, 1); return err },
			func() error { _, err := c.ListIntegrations(ctx, 1); return err },
			func() error { _, err := c.CreateIntegration(ctx, 1, IntegrationAlertmanager, "x"); return err },
			func() error { _, err := c.GetServiceAccountByName(ctx, "x"); return err },
			func() error { _, err := c.MintKey(ctx, 1); return err },
			func() error { _, err := c.Bootstrap(ctx, BootstrapRequest{Username: "admin"}); return err },
			func() error { return c.DeleteTeam(ctx, 1) },
		}
		err = calls[int(call)%len(calls)]()
		if err != nil && strings.Contains(err.Error(), key) {
			t.Fatalf("an error carries the key: %v", err)
		}
		var ae *APIError
		if code >= 400 && (!errors.As(err, &ae) || ae.StatusCode != code) && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(fmtErr(err), "rate limit") {
			t.Fatalf("status %d answered %v, want an APIError with that status", code, err)
		}
	})
}

func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r > '~' {
			return -1
		}
		return r
	}, s)
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzHeaders: Retry-After and RateLimit-Policy parse to sane values.
func FuzzHeaders(f *testing.F) {
	for _, s := range []string{"", "1", "-3", "3600", "Wed, 21 Oct 2015 07:28:00 GMT", "20;w=1", "600;w=60", "5", "1e308;w=1e-308", "NaN", "+Inf;w=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if d := retryAfter(h); d < 0 || d > maxRetryAfter {
			t.Fatalf("retryAfter(%q) = %v, outside [0, %v]", h, d, maxRetryAfter)
		}
		if l, ok := parsePolicy(h); ok && !positive(float64(l)) {
			t.Fatalf("parsePolicy(%q) = %v, a limit that is not a positive number", h, l)
		}
	})
}

// FuzzCanonicalMatcher: the canonical form of a matcher is canonical (a
// fixed point), and does not depend on the order of its pairs.
func FuzzCanonicalMatcher(f *testing.F) {
	for _, s := range []string{"alertname=Watchdog,cluster=prod", "cluster=prod, alertname=Watchdog", "", ",,", "a", "a==b", " k = v ,x=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, m string) {
		c := CanonicalMatcher(m)
		if again := CanonicalMatcher(c); again != c {
			t.Fatalf("CanonicalMatcher(%q) = %q, but CanonicalMatcher of that is %q", m, c, again)
		}
		parts := strings.Split(m, ",")
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		if r := CanonicalMatcher(strings.Join(parts, ",")); r != c {
			t.Fatalf("reversed pairs of %q canonicalise to %q, not %q", m, r, c)
		}
	})
}
