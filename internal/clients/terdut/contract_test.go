package terdut_test

// Contract tests: the client against the REST contract of terdut-api.md. By
// default they run against the in-memory double; with TERDUT_URL and
// TERDUT_TOKEN (an admin or instance-scoped key) they run against a real
// terdut-server, creating and deleting objects whose names start with
// "contract-".

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

type target struct {
	url   string
	token terdut.Secret
}

func contractTarget(t *testing.T) target {
	t.Helper()
	if u := os.Getenv("TERDUT_URL"); u != "" {
		return target{url: u, token: terdut.Secret(os.Getenv("TERDUT_TOKEN"))}
	}
	const key = "tdk_contract_admin"
	srv := httptest.NewServer(terdutdouble.New(terdutdouble.Options{AdminKey: key, Users: []string{"alice"}}).Handler())
	t.Cleanup(srv.Close)
	return target{url: srv.URL, token: key}
}

func newClient(t *testing.T, url string, token terdut.Secret) *terdut.Client {
	t.Helper()
	c, err := terdut.New(terdut.Options{Endpoint: url, Token: token})
	if err != nil {
		t.Fatalf("terdut.New(...): %v", err)
	}
	return c
}

func unique(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func TestContractAuth(t *testing.T) {
	tg := contractTarget(t)
	ctx := context.Background()
	if err := newClient(t, tg.url, "").Healthz(ctx); err != nil {
		t.Errorf("Healthz without a key: %v, want nil", err)
	}
	if _, err := newClient(t, tg.url, "").ListUsers(ctx); !terdut.IsUnauthorized(err) {
		t.Errorf("ListUsers without a key: %v, want 401", err)
	}
	if _, err := newClient(t, tg.url, "tdk_not_a_key").ListUsers(ctx); !terdut.IsUnauthorized(err) {
		t.Errorf("ListUsers with an unknown key: %v, want 401", err)
	}
	if _, err := newClient(t, tg.url, tg.token).Bootstrap(ctx, terdut.BootstrapRequest{Username: "late"}); !terdut.IsForbidden(err) {
		t.Errorf("Bootstrap of a bootstrapped server: %v, want 403", err)
	}
}

func TestContractTeam(t *testing.T) {
	tg := contractTarget(t)
	ctx := context.Background()
	c := newClient(t, tg.url, tg.token)
	name := unique("contract-team-")

	team, err := c.CreateTeam(ctx, name)
	if err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteTeam(context.Background(), team.ID) })
	if _, err := c.CreateTeam(ctx, name); !terdut.IsConflict(err) {
		t.Errorf("CreateTeam of a taken name: %v, want 409", err)
	}
	byName, err := c.GetTeamByName(ctx, name)
	if err != nil || byName == nil || byName.ID != team.ID {
		t.Errorf("GetTeamByName(%q) = %+v, %v; want ID %d", name, byName, err, team.ID)
	}
	if none, err := c.GetTeamByName(ctx, name+"-nobody"); err != nil || none != nil {
		t.Errorf("GetTeamByName of an unknown name = %+v, %v; want nil, nil", none, err)
	}
	if err := c.RenameTeam(ctx, team.ID, name+"-renamed"); err != nil {
		t.Fatalf("RenameTeam: %v", err)
	}
	if err := c.SetOIDCGroups(ctx, team.ID, terdut.OIDCGroups{MemberGroup: "m", OwnerGroup: "o"}); err != nil {
		t.Fatalf("SetOIDCGroups: %v", err)
	}
	got, err := c.GetTeam(ctx, team.ID)
	if err != nil {
		t.Fatalf("GetTeam: %v", err)
	}
	want := terdut.Team{ID: team.ID, Name: name + "-renamed", OIDCMemberGroup: "m", OIDCOwnerGroup: "o", CreatedAt: got.CreatedAt}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("GetTeam after rename and OIDC groups: -want, +got:\n%s", diff)
	}
	if err := c.DeleteTeam(ctx, team.ID); err != nil {
		t.Fatalf("DeleteTeam: %v", err)
	}
	if _, err := c.GetTeam(ctx, team.ID); !terdut.IsNotFound(err) {
		t.Errorf("GetTeam of a deleted team: %v, want 404", err)
	}
}

func TestContractEscalationPolicy(t *testing.T) {
	tg := contractTarget(t)
	ctx := context.Background()
	c := newClient(t, tg.url, tg.token)
	team, err := c.CreateTeam(ctx, unique("contract-esc-"))
	if err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteTeam(context.Background(), team.ID) })
	users, err := c.ListUsers(ctx)
	if err != nil || len(users) == 0 {
		t.Fatalf("ListUsers = %v, %v; want at least one user", users, err)
	}
	uid := users[0].ID
	want := terdut.EscalationPolicy{RepeatCount: 2, FallbackTopic: "ops", Levels: []terdut.EscalationLevel{
		{Timeout: "5m", Targets: []terdut.EscalationTarget{{Kind: terdut.TargetOnCall}, {Kind: terdut.TargetUser, UserID: &uid}}},
		{Timeout: "15m", Targets: []terdut.EscalationTarget{{Kind: terdut.TargetOnCall}}},
	}}
	if err := c.PutEscalationPolicy(ctx, team.ID, want); err != nil {
		t.Fatalf("PutEscalationPolicy: %v", err)
	}
	got, err := c.GetEscalationPolicy(ctx, team.ID)
	if err != nil {
		t.Fatalf("GetEscalationPolicy: %v", err)
	}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("GetEscalationPolicy: -want, +got:\n%s", diff)
	}
	if err := c.PutEscalationPolicy(ctx, team.ID, terdut.EscalationPolicy{}); err != nil {
		t.Fatalf("PutEscalationPolicy(empty): %v", err)
	}
	if got, err := c.GetEscalationPolicy(ctx, team.ID); err != nil || !got.IsEmpty() {
		t.Errorf("GetEscalationPolicy after the empty PUT = %+v, %v; want the empty policy", got, err)
	}
	if _, err := c.GetEscalationPolicy(ctx, team.ID+1_000_000); !terdut.IsNotFound(err) {
		t.Errorf("GetEscalationPolicy of an unknown team: %v, want 404", err)
	}
}

func TestContractDeadmanSwitch(t *testing.T) {
	tg := contractTarget(t)
	ctx := context.Background()
	c := newClient(t, tg.url, tg.token)
	team, err := c.CreateTeam(ctx, unique("contract-dms-"))
	if err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteTeam(context.Background(), team.ID) })

	sw, err := c.CreateDeadmanSwitch(ctx, team.ID, terdut.DeadmanSwitch{Matcher: "cluster=prod, alertname=Watchdog", Timeout: "15m", Severity: "critical"})
	if err != nil {
		t.Fatalf("CreateDeadmanSwitch: %v", err)
	}
	if want := "alertname=Watchdog,cluster=prod"; sw.Name != want {
		t.Errorf("derived switch name = %q, want %q", sw.Name, want)
	}
	// No unique-name constraint: a second switch of the same name is created.
	if _, err := c.CreateDeadmanSwitch(ctx, team.ID, terdut.DeadmanSwitch{Name: sw.Name, Matcher: "alertname=Watchdog", Timeout: "5m", Severity: "warning"}); err != nil {
		t.Errorf("CreateDeadmanSwitch of a used name: %v, want nil", err)
	}
	upd := terdut.DeadmanSwitch{Name: "prod-watchdog", Matcher: "alertname=Watchdog", Timeout: "30m", Severity: "warning"}
	if err := c.UpdateDeadmanSwitch(ctx, team.ID, sw.ID, upd); err != nil {
		t.Fatalf("UpdateDeadmanSwitch: %v", err)
	}
	list, err := c.ListDeadmanSwitches(ctx, team.ID)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListDeadmanSwitches = %v, %v; want 2 switches", list, err)
	}
	upd.ID = sw.ID
	// created_at is [assumed]: a server may or may not say it.
	if diff := cmp.Diff(upd, list[0], cmpopts.IgnoreFields(terdut.DeadmanSwitch{}, "CreatedAt")); diff != "" {
		t.Errorf("switch after PUT: -want, +got:\n%s", diff)
	}
	if err := c.DeleteDeadmanSwitch(ctx, team.ID, sw.ID); err != nil {
		t.Fatalf("DeleteDeadmanSwitch: %v", err)
	}
	if err := c.DeleteDeadmanSwitch(ctx, team.ID, sw.ID); !terdut.IsNotFound(err) {
		t.Errorf("DeleteDeadmanSwitch twice: %v, want 404", err)
	}
}

func TestContractIntegration(t *testing.T) {
	tg := contractTarget(t)
	ctx := context.Background()
	c := newClient(t, tg.url, tg.token)
	team, err := c.CreateTeam(ctx, unique("contract-int-"))
	if err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteTeam(context.Background(), team.ID) })

	in, err := c.CreateIntegration(ctx, team.ID, terdut.IntegrationAlertmanager, "prod-am")
	if err != nil {
		t.Fatalf("CreateIntegration: %v", err)
	}
	if in.URL == "" || in.Key == "" {
		t.Errorf("CreateIntegration: url or key empty; the POST answer is the only place they are shown")
	}
	if err := c.RenameIntegration(ctx, team.ID, in.ID, "prod-am-2"); err != nil {
		t.Fatalf("RenameIntegration: %v", err)
	}
	list, err := c.ListIntegrations(ctx, team.ID)
	if err != nil {
		t.Fatalf("ListIntegrations: %v", err)
	}
	want := []terdut.Integration{{ID: in.ID, Kind: terdut.IntegrationAlertmanager, Name: "prod-am-2"}}
	if diff := cmp.Diff(want, list, cmpopts.IgnoreFields(terdut.Integration{}, "CreatedAt")); diff != "" {
		t.Errorf("ListIntegrations (no url, no key): -want, +got:\n%s", diff)
	}
	if err := c.DeleteIntegration(ctx, team.ID, in.ID); err != nil {
		t.Fatalf("DeleteIntegration: %v", err)
	}
}

func TestContractServiceAccounts(t *testing.T) {
	tg := contractTarget(t)
	ctx := context.Background()
	c := newClient(t, tg.url, tg.token)
	team, err := c.CreateTeam(ctx, unique("contract-sa-"))
	if err != nil {
		t.Fatalf("CreateTeam: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteTeam(context.Background(), team.ID) })

	name := unique("contract-sa-")
	sa, err := c.CreateServiceAccount(ctx, terdut.ServiceAccount{Name: name, Scope: terdut.ScopeTeam, TeamID: &team.ID})
	if err != nil {
		t.Fatalf("CreateServiceAccount: %v", err)
	}
	t.Cleanup(func() { _ = c.DeleteServiceAccount(context.Background(), sa.ID) })
	if _, err := c.CreateServiceAccount(ctx, terdut.ServiceAccount{Name: name, Scope: terdut.ScopeInstance}); !terdut.IsConflict(err) {
		t.Errorf("CreateServiceAccount of a taken name: %v, want 409", err)
	}
	if got, err := c.GetServiceAccountByName(ctx, name); err != nil || got == nil || got.ID != sa.ID {
		t.Errorf("GetServiceAccountByName = %+v, %v; want ID %d", got, err, sa.ID)
	}
	key, err := c.MintKey(ctx, sa.ID)
	if err != nil || key.Key == "" {
		t.Fatalf("MintKey = %+v, %v; want a raw key", key, err)
	}
	tc := newClient(t, tg.url, key.Key)
	if _, err := tc.ListIntegrations(ctx, team.ID); err != nil {
		t.Errorf("team key on its own team: %v, want nil", err)
	}
	if _, err := tc.ListUsers(ctx); err != nil {
		t.Errorf("team key listing users: %v, want nil", err)
	}
	if _, err := tc.GetTeamByName(ctx, "anything"); !terdut.IsForbidden(err) {
		t.Errorf("team key listing teams: %v, want 403", err)
	}
	if _, err := tc.ListIntegrations(ctx, team.ID+1_000_000); !terdut.IsForbidden(err) {
		t.Errorf("team key on another team: %v, want 403", err)
	}
	if err := c.RevokeKey(ctx, sa.ID, key.ID); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	if _, err := tc.ListUsers(ctx); !terdut.IsUnauthorized(err) {
		t.Errorf("revoked key: %v, want 401", err)
	}
}
