package terdut

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

func TestRetryAfter(t *testing.T) {
	cases := map[string]struct {
		reason string
		header string
		want   time.Duration
	}{
		"Seconds":  {reason: "A number is seconds.", header: "2", want: 2 * time.Second},
		"Missing":  {reason: "No header waits one second.", header: "", want: time.Second},
		"Capped":   {reason: "A long wait is capped.", header: "3600", want: maxRetryAfter},
		"Negative": {reason: "A negative value is ignored.", header: "-4", want: time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := retryAfter(tc.header); got != tc.want {
				t.Errorf("\n%s\nretryAfter(%q) = %v, want %v", tc.reason, tc.header, got, tc.want)
			}
		})
	}
}

func TestDoHonours429(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`[{"id":1,"username":"alice"}]`))
	}))
	defer srv.Close()

	c, err := New(Options{Endpoint: srv.URL, Token: "tdk_secret"})
	if err != nil {
		t.Fatal(err)
	}
	var waited []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { waited = append(waited, d); return nil }

	users, err := c.ListUsers(context.Background())
	if err != nil {
		t.Fatalf("ListUsers after two 429s: %v", err)
	}
	if diff := cmp.Diff([]time.Duration{7 * time.Second, 7 * time.Second}, waited); diff != "" {
		t.Errorf("waits: -want, +got:\n%s", diff)
	}
	if len(users) != 1 || users[0].Username != "alice" {
		t.Errorf("ListUsers = %+v, want alice", users)
	}
}

func TestDoGivesUpOn429(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c, _ := New(Options{Endpoint: srv.URL, MaxRetries: 2})
	n := 0
	c.sleep = func(context.Context, time.Duration) error { n++; return nil }
	_, err := c.ListUsers(context.Background())
	if !statusIs(err, http.StatusTooManyRequests) || n != 2 {
		t.Errorf("ListUsers = %v after %d waits; want a 429 error after 2 waits", err, n)
	}
}

func TestErrorsNeverCarryAKey(t *testing.T) {
	const key = "tdk_0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"database unavailable"}`))
	}))
	defer srv.Close()
	c, _ := New(Options{Endpoint: srv.URL, Token: key})

	_, err := c.GetTeam(context.Background(), 42)
	if err == nil {
		t.Fatal("GetTeam against a failing server: nil error")
	}
	if IsNotFound(err) {
		t.Errorf("a 500 reads as not found: %v", err)
	}
	want := "terdut-server: GET /api/teams/42: 500: database unavailable"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err.Error(), want)
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", c), fmt.Sprintf("%v", c)} {
		if strings.Contains(s, key) {
			t.Errorf("a key leaked into %q", s)
		}
	}
}

func TestSecretRedacts(t *testing.T) {
	in := Integration{ID: 1, Name: "am", URL: "http://x/y", Key: "tdi_raw"}
	//lint:ignore S1025 each fmt verb is what is under test.
	for _, s := range []string{fmt.Sprint(in), fmt.Sprintf("%v", in), fmt.Sprintf("%+v", in), fmt.Sprintf("%#v", in), in.Key.String()} {
		if strings.Contains(s, "tdi_raw") || strings.Contains(s, "http://x/y") {
			t.Errorf("a secret leaked through fmt: %q", s)
		}
	}
	if in.Key.Reveal() != "tdi_raw" {
		t.Errorf("Reveal() = %q, want the raw key", in.Key.Reveal())
	}
}

func TestTimeoutIsNotNotFound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, _ := New(Options{Endpoint: srv.URL, Timeout: 50 * time.Millisecond})
	_, err := c.GetTeam(context.Background(), 1)
	var apiErr *APIError
	if err == nil || IsNotFound(err) || errors.As(err, &apiErr) {
		t.Errorf("GetTeam that times out = %v; want a transport error that is not a 404", err)
	}
}

func TestNewRejectsBadEndpoint(t *testing.T) {
	for _, e := range []string{"", "ftp://x", "not a url", "http://"} {
		if _, err := New(Options{Endpoint: e}); err == nil {
			t.Errorf("New(Endpoint: %q): nil error", e)
		}
	}
	if _, err := New(Options{Endpoint: "https://x", CABundle: []byte("junk")}); !errors.Is(err, errBadCA) {
		t.Errorf("New with a junk CA: %v, want %v", err, errBadCA)
	}
}

func TestCache(t *testing.T) {
	c := NewCache()
	built := 0
	c.newFn = func(o Options) (*Client, error) { built++; return New(o) }
	o := Options{Endpoint: "http://127.0.0.1:1", Token: "a"}

	a1, _ := c.Get("ClusterProviderConfig/default", o)
	a2, _ := c.Get("ClusterProviderConfig/default", o)
	if a1 != a2 || built != 1 {
		t.Errorf("same options built %d clients (same=%v); want one reused client", built, a1 == a2)
	}
	o.Token = "b"
	b, _ := c.Get("ClusterProviderConfig/default", o)
	if b == a1 || c.Len() != 1 {
		t.Errorf("a rotated key: new client=%v, cached=%d; want a new client replacing the old entry", b != a1, c.Len())
	}
	_, _ = c.Get("ProviderConfig/team-a/terdut", o)
	_, _ = c.Get("ClusterProviderConfig/default/team/7", o)
	_, _ = c.Get("ClusterProviderConfig/default2", o)
	c.Forget("ClusterProviderConfig/default")
	if c.Len() != 2 {
		t.Errorf("after Forget: %d cached, want 2 (the config's own clients and its team's go; another config's stay)", c.Len())
	}
	if c.Builds() != 5 {
		t.Errorf("Builds() = %d, want 5", c.Builds())
	}
}

// BenchmarkCacheGet shows what a reconcile pays to obtain its client.
func BenchmarkCacheGet(b *testing.B) {
	c := NewCache()
	o := Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_0123456789abcdef0123456789abcdef"}
	for b.Loop() {
		if _, err := c.Get("ClusterProviderConfig/default", o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewClient is what a reconcile would pay without the cache.
func BenchmarkNewClient(b *testing.B) {
	o := Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_0123456789abcdef0123456789abcdef"}
	for b.Loop() {
		if _, err := New(o); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRefreshOn401Once(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer new" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`[]`))
	}))
	defer srv.Close()
	refreshes := 0
	c, _ := New(Options{Endpoint: srv.URL, Token: "old", Refresh: func(context.Context) (Secret, error) { refreshes++; return "new", nil }})
	if _, err := c.ListUsers(t.Context()); err != nil || refreshes != 1 || calls.Load() != 2 {
		t.Errorf("ListUsers with a revoked key = %v after %d refreshes and %d calls; want success after 1 refresh, 2 calls", err, refreshes, calls.Load())
	}

	bad, _ := New(Options{Endpoint: srv.URL, Token: "old", Refresh: func(context.Context) (Secret, error) { refreshes++; return "still-wrong", nil }})
	refreshes, _ = 0, calls.Swap(0)
	if _, err := bad.ListUsers(t.Context()); !IsUnauthorized(err) || refreshes != 1 || calls.Load() != 2 {
		t.Errorf("a refresh that does not help = %v after %d refreshes and %d calls; want a 401 after exactly one refresh", err, refreshes, calls.Load())
	}
}

func TestParsePolicy(t *testing.T) {
	cases := map[string]struct {
		header string
		want   float64
		ok     bool
	}{
		"PerSecond":   {header: "20;w=1", want: 20, ok: true},
		"PerMinute":   {header: "600;w=60", want: 10, ok: true},
		"NoWindow":    {header: "5", want: 5, ok: true},
		"FirstPolicy": {header: "10;w=1, 100;w=60", want: 10, ok: true},
		"Missing":     {header: ""},
		"Junk":        {header: "lots;w=x"},
		"Zero":        {header: "0;w=1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := parsePolicy(tc.header)
			if ok != tc.ok || float64(got) != tc.want {
				t.Errorf("parsePolicy(%q) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestLimiterLearns: a stated limit sets the pace (90% of it, burst one, so
// no window sees more than it allows), and a 429 pauses every request until
// its Retry-After.
func TestLimiterLearns(t *testing.T) {
	l := newLimiter()
	h := http.Header{}
	h.Set(headerRateLimitPolicy, "20;w=1")
	h.Set("Retry-After", "3")
	before := time.Now()
	l.observe(h, http.StatusTooManyRequests)
	if l.rate.Limit() != 18 || l.rate.Burst() != 1 {
		t.Errorf("pace %v burst %d, want 18 a second (90%% of 20), burst 1", l.rate.Limit(), l.rate.Burst())
	}
	if l.until.Before(before.Add(3*time.Second)) || l.throttled != 1 {
		t.Errorf("pause until %v (want 3 s from now), throttled %d", l.until.Sub(before), l.throttled)
	}
}

// TestStatedLimitLapses: a limit the server stops stating lapses
// statedLapse after the last answer that stated it; until then answers
// without it (a server that states it only on some) keep the pace.
func TestStatedLimitLapses(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	l := newLimiter()
	l.now = func() time.Time { return clock }
	stating := http.Header{}
	stating.Set(headerRateLimitPolicy, "20;w=1")
	l.observe(stating, http.StatusOK)

	clock = clock.Add(statedLapse / 2)
	l.observe(http.Header{}, http.StatusOK)
	if l.rate.Limit() != 18 {
		t.Fatalf("pace %v %v after the last statement, want still 18 a second", l.rate.Limit(), statedLapse/2)
	}
	clock = clock.Add(statedLapse)
	l.observe(http.Header{}, http.StatusOK)
	if l.rate.Limit() != rate.Inf {
		t.Errorf("pace %v after the server stopped stating a limit for %v, want unlimited", l.rate.Limit(), 3*statedLapse/2)
	}
	l.observe(stating, http.StatusOK)
	if l.rate.Limit() != 18 {
		t.Errorf("pace %v after the limit was stated again, want 18 a second", l.rate.Limit())
	}
}

// Every key of one server shares one connection pool: 20 team keys asking in
// turn use one connection, not 20; a server nobody uses any more is dropped.
func TestKeysOfAServerShareConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("[]"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := NewCache()
	for i := range 20 {
		cl, err := c.Get(fmt.Sprintf("ClusterProviderConfig/default/team/%d", i), Options{Endpoint: srv.URL, Token: Secret(fmt.Sprintf("tdk_%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.ListUsers(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 keys asking in turn opened %d connections, want 1", n)
	}
	c.Forget("ClusterProviderConfig/default")
	if len(c.servers) != 0 {
		t.Errorf("after the last config of a server is forgotten, %d servers are still kept", len(c.servers))
	}
}

// Two spellings of one server's endpoint are one server: one pace (its
// stated rate is not exceeded by the sum of two limiters) and one set of
// lists (a write through either drops what the other would show).
func TestOneServerUnderTwoSpellings(t *testing.T) {
	var lists atomic.Int32
	var made atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			made.Store(true)
			_, _ = w.Write([]byte(`{"id": 7, "kind": "alertmanager", "name": "am"}`))
		case made.Load():
			lists.Add(1)
			_, _ = w.Write([]byte(`[{"id": 7, "kind": "alertmanager", "name": "am"}]`))
		default:
			lists.Add(1)
			_, _ = w.Write([]byte("[]"))
		}
	}))
	defer srv.Close()
	c := NewCache()
	a, err := c.Get("ProviderConfig/a/x", Options{Endpoint: srv.URL, Token: "tdk_a", ListMaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Get("ProviderConfig/b/x", Options{Endpoint: strings.Replace(srv.URL, "http://", "HTTP://", 1) + "/", Token: "tdk_a", ListMaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if a.limiter != b.limiter || a.lists != b.lists {
		t.Errorf("one server under two spellings: shared limiter %t, shared lists %t; want both", a.limiter == b.limiter, a.lists == b.lists)
	}
	if l, err := a.ListIntegrations(t.Context(), 1); err != nil || len(l) != 0 {
		t.Fatalf("first list: %v, %v", l, err)
	}
	if _, err := b.CreateIntegration(t.Context(), 1, "alertmanager", "am"); err != nil {
		t.Fatal(err)
	}
	if l, err := a.ListIntegrations(t.Context(), 1); err != nil || len(l) != 1 {
		t.Errorf("after a create through the other spelling, the list shows %d integrations (%v), want 1", len(l), err)
	}
}
