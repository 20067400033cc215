package serviceaccount

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

const adminKey = "tdk_test_admin"

// tenantAccount is a tenant's team-scoped ServiceAccount of name for team.
func tenantAccount(name string, team int64) *v1alpha1.ServiceAccount {
	return &v1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1alpha1.ServiceAccountSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-key"}},
			ForProvider:         v1alpha1.ServiceAccountParameters{Name: name, Scope: terdut.ScopeTeam, TeamID: &team},
		},
	}
}

// admin makes the fixture's provider config hold the server's admin key.
func (f *fixture) admin(t *testing.T) *terdut.Client {
	t.Helper()
	return f.usePC(t, adminKey)
}

// usePC makes the fixture's provider config hold key.
func (f *fixture) usePC(t *testing.T, key terdut.Secret) *terdut.Client {
	t.Helper()
	pc, err := terdut.New(terdut.Options{Endpoint: f.url, Token: key, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	f.e.pc, f.e.pcAuthenticated = pc, true
	f.e.pcKeyIs = func(k terdut.Secret) bool { return k == key }
	return pc
}

// TestA401ToTheConfigsKeyIsNotGone: deleting an account
// whose provider config's key was revoked gets a 401 that says nothing of
// the account: the finalizer must stay, with the account and its key.
func TestA401ToTheConfigsKeyIsNotGone(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	cr := sa()
	cr.Spec.ForProvider.Bootstrap = nil
	f.admin(t)
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	f.usePC(t, "tdk_revoked_config_key")
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
	if o, err := f.e.Observe(t.Context(), cr); err == nil && !o.ResourceExists {
		t.Error("Observe read a 401 to the provider config's key as the account gone")
	}
	if _, err := f.e.Delete(t.Context(), cr); err == nil {
		t.Error("Delete read a 401 to the provider config's key as the account gone")
	}
	if n := len(f.double.Snapshot().ServiceAccounts); n != 1 {
		t.Errorf("%d accounts, want the one still there", n)
	}
}

// TestAKeyIsProbedPastTheSharedLists: whether the key in the
// Secret still works is asked of the server with that key, not answered
// from a users list another key fetched; and only a 401 means it does not:
// a 503 must not rotate a working key.
func TestAKeyIsProbedPastTheSharedLists(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	cr := sa()
	cr.Spec.ForProvider.Bootstrap = nil
	f.admin(t)
	cache := terdut.NewCache()
	f.e.withKey = func(purpose string, tok terdut.Secret) (api, error) {
		return cache.Get(purpose, terdut.Options{Endpoint: f.url, Token: tok, MaxRetries: -1, ListMaxAge: time.Hour})
	}
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	acct := f.double.Snapshot().ServiceAccounts[0]
	if len(acct.KeyIDs) != 1 {
		t.Fatalf("%d keys after converging, want 1", len(acct.KeyIDs))
	}

	// A 503 to the probe: no new key.
	meta.SetExternalName(cr, "")
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/users", Status: http.StatusServiceUnavailable, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Error("Create went on although the server could not say whether the key works")
	}
	if n := keysOn(f.double, acct.ID); n != 1 {
		t.Errorf("a 503 to the key probe minted: %d keys, want 1", n)
	}

	// The key is revoked while another key's users list is shared: the
	// probe must still find out.
	other, _ := cache.Get("other", terdut.Options{Endpoint: f.url, Token: adminKey, ListMaxAge: time.Hour})
	if _, err := other.ListUsers(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := f.e.pc.RevokeKey(t.Context(), acct.ID, acct.KeyIDs[0]); err != nil {
		t.Fatal(err)
	}
	meta.SetExternalName(cr, "")
	if err := f.reconcile(t, cr); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := f.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "instance-credentials"}, s); err != nil {
		t.Fatal(err)
	}
	if v := f.double.Verify(string(s.Data[SecretKeyToken])); !v.Valid {
		t.Errorf("the Secret holds a revoked key: the probe was answered from a shared list (%+v)", v)
	}
}

func keysOn(d *terdutdouble.Server, accountID int64) int {
	for _, a := range d.Snapshot().ServiceAccounts {
		if a.ID == accountID {
			return len(a.KeyIDs)
		}
	}
	return 0
}

// TestAdoptsOnlyAnAccountOfItsScopeAndTeam: a tenant's
// team-scoped ServiceAccount named like an account of the whole server, or
// of another team, must not adopt it and get a key of it in its Secret.
func TestAdoptsOnlyAnAccountOfItsScopeAndTeam(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	pc := f.admin(t)
	own, _ := pc.CreateTeam(t.Context(), "B")
	other, _ := pc.CreateTeam(t.Context(), "A")
	bot, err := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "ci-bot", Scope: terdut.ScopeInstance})
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "alerts", Scope: terdut.ScopeTeam, TeamID: &other.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []*terdut.ServiceAccount{bot, alerts} {
		cr := tenantAccount(target.Name, own.ID)
		err := f.reconcile(t, cr)
		if err == nil {
			t.Errorf("%s: a tenant's team account adopted %s account %d", target.Name, target.Scope, target.ID)
		}
		if c := cr.GetCondition(xpv2.TypeReady); c.Reason != extclient.ReasonResourceNotOwned {
			t.Errorf("%s: Ready = %s %q, want ResourceNotOwned", target.Name, c.Reason, c.Message)
		}
		if n := keysOn(f.double, target.ID); n != 0 {
			t.Errorf("%s: %d keys minted on an account the tenant must not hold", target.Name, n)
		}
		if err := f.kube.Get(t.Context(), types.NamespacedName{Namespace: cr.GetNamespace(), Name: target.Name + "-key"}, &corev1.Secret{}); err == nil {
			t.Errorf("%s: the tenant got a connection Secret", target.Name)
		}
		if meta.GetExternalName(cr) != "" {
			t.Errorf("%s: external name %q recorded", target.Name, meta.GetExternalName(cr))
		}
	}

	// An account of the tenant's own team is still adopted.
	mine, _ := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "b-bot", Scope: terdut.ScopeTeam, TeamID: &own.ID})
	cr := tenantAccount("b-bot", own.ID)
	if err := f.reconcile(t, cr); err != nil {
		t.Fatalf("adopting an account of the tenant's own team: %v", err)
	}
	if meta.GetExternalName(cr) != extclient.FormatID(mine.ID) || keysOn(f.double, mine.ID) != 1 {
		t.Errorf("own team's account: external name %q, %d keys; want %d, 1", meta.GetExternalName(cr), keysOn(f.double, mine.ID), mine.ID)
	}
}

// TestObserveRefusesAnAccountOfAnotherScope: a hand-set
// external name of an unmanaged instance account of the same name must not
// let Update mint a key of it into the tenant's Secret.
func TestObserveRefusesAnAccountOfAnotherScope(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	pc := f.admin(t)
	own, _ := pc.CreateTeam(t.Context(), "B")
	bot, _ := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "ci-bot", Scope: terdut.ScopeInstance})
	cr := tenantAccount("ci-bot", own.ID)
	extclient.SetExternalID(cr, bot.ID)
	for range 2 {
		if err := f.reconcile(t, cr); err == nil {
			t.Error("a reconcile of a hand-set external name of an instance account succeeded")
		}
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != extclient.ReasonResourceNotOwned || c.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %s %s, want False ResourceNotOwned", c.Status, c.Reason)
	}
	if n := keysOn(f.double, bot.ID); n != 0 {
		t.Errorf("%d keys minted on the instance account", n)
	}
}

// TestTeamKeyAccountNamesAreReserved: no ServiceAccount may
// take the name of a team key's account, in any namespace.
func TestTeamKeyAccountNamesAreReserved(t *testing.T) {
	cr := tenantAccount(credentials.AccountName(7), 7)
	err := instanceScopeAtHome("crossplane-system")(t.Context(), cr, credentials.Config{})
	if err == nil {
		t.Fatal("a ServiceAccount named crossplane-team-7 was admitted")
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != ReasonReservedName {
		t.Errorf("Ready reason %q, want %q", c.Reason, ReasonReservedName)
	}
}
