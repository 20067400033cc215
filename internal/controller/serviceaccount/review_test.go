package serviceaccount

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

const adminKey = "tdk_review_admin"

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
	pc, err := terdut.New(terdut.Options{Endpoint: f.url, Token: adminKey, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	f.e.pc, f.e.pcAuthenticated = pc, true
	return pc
}

func keysOn(d *terdutdouble.Server, accountID int64) int {
	for _, a := range d.Snapshot().ServiceAccounts {
		if a.ID == accountID {
			return len(a.KeyIDs)
		}
	}
	return 0
}

// TestAdoptsOnlyAnAccountOfItsScopeAndTeam (review item 1): a tenant's
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
		if c := cr.GetCondition(xpv2.TypeReady); c.Reason != generic.ReasonResourceNotOwned {
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
	if meta.GetExternalName(cr) != generic.FormatID(mine.ID) || keysOn(f.double, mine.ID) != 1 {
		t.Errorf("own team's account: external name %q, %d keys; want %d, 1", meta.GetExternalName(cr), keysOn(f.double, mine.ID), mine.ID)
	}
}

// TestObserveRefusesAnAccountOfAnotherScope (review item 1): a hand-set
// external name of an unmanaged instance account of the same name must not
// let Update mint a key of it into the tenant's Secret.
func TestObserveRefusesAnAccountOfAnotherScope(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	pc := f.admin(t)
	own, _ := pc.CreateTeam(t.Context(), "B")
	bot, _ := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "ci-bot", Scope: terdut.ScopeInstance})
	cr := tenantAccount("ci-bot", own.ID)
	generic.SetExternalID(cr, bot.ID)
	for range 2 {
		if err := f.reconcile(t, cr); err == nil {
			t.Error("a reconcile of a hand-set external name of an instance account succeeded")
		}
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != generic.ReasonResourceNotOwned || c.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %s %s, want False ResourceNotOwned", c.Status, c.Reason)
	}
	if n := keysOn(f.double, bot.ID); n != 0 {
		t.Errorf("%d keys minted on the instance account", n)
	}
}

// TestTeamKeyAccountNamesAreReserved (review item 1): no ServiceAccount may
// take the name of a team key's account, in any namespace.
func TestTeamKeyAccountNamesAreReserved(t *testing.T) {
	cr := tenantAccount(generic.AccountName(7), 7)
	err := instanceScopeAtHome("crossplane-system")(t.Context(), cr, generic.Config{})
	if err == nil {
		t.Fatal("a ServiceAccount named crossplane-team-7 was admitted")
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != ReasonReservedName {
		t.Errorf("Ready reason %q, want %q", c.Reason, ReasonReservedName)
	}
}
