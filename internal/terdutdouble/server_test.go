package terdutdouble

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

func serve(t *testing.T, o Options) (*Server, *terdut.Client, string) {
	t.Helper()
	s := New(o)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	c, err := terdut.New(terdut.Options{Endpoint: hs.URL, Token: terdut.Secret(o.AdminKey), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, hs.URL
}

func TestBootstrapIsSingleShot(t *testing.T) {
	_, _, url := serve(t, Options{})
	anon, _ := terdut.New(terdut.Options{Endpoint: url})
	rsp, err := anon.Bootstrap(t.Context(), terdut.BootstrapRequest{Username: "admin"})
	if err != nil || rsp.APIKey.Key == "" {
		t.Fatalf("first bootstrap = %+v, %v; want an admin key", rsp, err)
	}
	if _, err := anon.Bootstrap(t.Context(), terdut.BootstrapRequest{Username: "again"}); !terdut.IsForbidden(err) {
		t.Errorf("second bootstrap: %v, want 403", err)
	}
	admin, _ := terdut.New(terdut.Options{Endpoint: url, Token: rsp.APIKey.Key})
	if _, err := admin.CreateTeam(t.Context(), "x"); err != nil {
		t.Errorf("the bootstrap key cannot create a team: %v", err)
	}
}

func TestFaultTimesAndCounters(t *testing.T) {
	s, c, _ := serve(t, Options{AdminKey: "k"})
	s.AddFault(Fault{Method: http.MethodGet, Route: "/api/users", Status: http.StatusServiceUnavailable, Times: 2})
	for i, want := range []bool{true, true, false} {
		_, err := c.ListUsers(t.Context())
		if got := err != nil; got != want {
			t.Errorf("call %d: error %v, want error %v", i, err, want)
		}
	}
	if n := s.Count("GET /api/users"); n != 3 {
		t.Errorf("counter = %d, want 3", n)
	}
}

func TestCommitThenFail(t *testing.T) {
	s, c, _ := serve(t, Options{AdminKey: "k"})
	s.AddFault(Fault{Method: http.MethodPost, Route: "/api/teams", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := c.CreateTeam(t.Context(), "Platform"); err == nil {
		t.Fatal("CreateTeam under commit-then-fail: nil error")
	}
	if tm, err := c.GetTeamByName(t.Context(), "Platform"); err != nil || tm == nil {
		t.Errorf("the committed team is missing: %v, %v", tm, err)
	}
}

func TestNotFoundAfterCreate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, c, _ := serve(t, Options{AdminKey: "k", Now: func() time.Time { return now }})
	s.SetNotFoundAfterCreate(5 * time.Second)
	tm, err := c.CreateTeam(t.Context(), "Platform")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTeam(t.Context(), tm.ID); !terdut.IsNotFound(err) {
		t.Errorf("GET right after create: %v, want 404", err)
	}
	now = now.Add(6 * time.Second)
	if _, err := c.GetTeam(t.Context(), tm.ID); err != nil {
		t.Errorf("GET after the window: %v", err)
	}
}

func TestDeleteTeamCascades(t *testing.T) {
	s, c, _ := serve(t, Options{AdminKey: "k"})
	tm, _ := c.CreateTeam(t.Context(), "Platform")
	_, _ = c.CreateDeadmanSwitch(t.Context(), tm.ID, terdut.DeadmanSwitch{Matcher: "a=b", Timeout: "1m"})
	_, _ = c.CreateIntegration(t.Context(), tm.ID, "alertmanager", "am")
	sa, _ := c.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "t", Scope: terdut.ScopeTeam, TeamID: &tm.ID})
	if err := c.DeleteTeam(t.Context(), tm.ID); err != nil {
		t.Fatal(err)
	}
	st := s.Snapshot()
	if len(st.Switches)+len(st.Integrations)+len(st.ServiceAccounts) != 0 {
		t.Errorf("rows left after deleting team %d (account %d): %+v", tm.ID, sa.ID, st)
	}
}
