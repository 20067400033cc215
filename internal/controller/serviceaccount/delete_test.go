package serviceaccount

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func TestDeleteRemovesAccount(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	if err := f.reconcile(t, cr); err != nil {
		t.Fatal(err)
	}
	if err := f.delete(t, cr); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := len(f.double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("%d accounts after Delete", n)
	}
}

func TestDeletingItselfIsNotStuck(t *testing.T) {
	// The provider config names this account's own Secret: after Delete, the
	// key it observes with is refused, and that must read as gone.
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	if err := f.reconcile(t, cr); err != nil {
		t.Fatal(err)
	}
	own := terdut.Secret(f.secret(t, "instance-credentials").Data[SecretKeyToken])
	f.usePC(t, own)
	if err := f.delete(t, cr); err != nil {
		t.Fatal(err)
	}
	if o, err := f.e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Errorf("Observe after deleting itself = %+v, %v; want gone", o, err)
	}
}

// TestDeleteRetriesCheckpointCleanup: Delete removes the account and then a
// bootstrap checkpoint left behind (an admin key). When the second step
// fails, the next reconcile must not read the account's absence as "all
// gone": the finalizer stays until the checkpoint is gone too.
func TestDeleteRetriesCheckpointCleanup(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	if err := f.reconcile(t, cr); err != nil {
		t.Fatal(err)
	}
	// An interrupted bootstrap's checkpoint, still there.
	owner := []metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "ServiceAccount", Name: cr.GetName(), UID: cr.GetUID()}}
	if err := f.kube.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: checkpointName(cr), OwnerReferences: owner}, Data: map[string][]byte{SecretKeyToken: []byte("tdk_left_behind")}}); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
	f.fail["delete"] = checkpointName(cr)
	for i := 0; ; i++ {
		if i == 5 {
			t.Fatal("the finalizer never went")
		}
		o, err := f.e.Observe(t.Context(), cr)
		if err != nil {
			t.Fatalf("reconcile %d: Observe: %v", i, err)
		}
		if !o.ResourceExists {
			break
		}
		_, _ = f.e.Delete(t.Context(), cr)
	}
	if n := len(f.double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("%d accounts left", n)
	}
	if f.secret(t, checkpointName(cr)) != nil {
		t.Error("the finalizer went while the bootstrap checkpoint (an admin key) was still there")
	}
}

// TestInstanceScopeOnlyAtHome: an instance-scoped ServiceAccount outside the
// provider's namespace is refused (a tenant must never hold a key for the
// whole server), and being deleted it touches nothing; a team-scoped one is
// left to the ownership gate.
func TestInstanceScopeOnlyAtHome(t *testing.T) {
	gate := instanceScopeAtHome(ns)
	tenant := sa()
	tenant.Namespace = "team-a"
	if err := gate(t.Context(), tenant, credentials.Config{}); err == nil || !extclient.IsUntouchable(err) {
		t.Errorf("instance scope in team-a: %v, want refused and untouchable", err)
	}
	if r := tenant.GetCondition(xpv2.TypeReady).Reason; r != ReasonInstanceScopeNotPermitted {
		t.Errorf("Ready reason %q, want %q", r, ReasonInstanceScopeNotPermitted)
	}
	if err := gate(t.Context(), sa(), credentials.Config{}); err != nil {
		t.Errorf("instance scope in the provider's namespace: %v", err)
	}
	tenant = sa()
	tenant.Namespace, tenant.Spec.ForProvider.Scope = "team-a", terdut.ScopeTeam
	if err := gate(t.Context(), tenant, credentials.Config{}); err != nil {
		t.Errorf("team scope in team-a: %v, want it left to the ownership gate", err)
	}
}

// TestDeletingNeverRemovesAnAccountOfAnotherScope: a tenant's team-scoped
// ServiceAccount whose (hand-set) external name is an instance account made
// by hand is refused while it lives; deleting it (a finalizer of the
// tenant's own keeps it reconciled) must not delete that account either.
func TestDeletingNeverRemovesAnAccountOfAnotherScope(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	pc := f.admin(t)
	own, _ := pc.CreateTeam(t.Context(), "B")
	ops, _ := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "ops-instance", Scope: terdut.ScopeInstance})
	other, _ := pc.CreateTeam(t.Context(), "C")
	theirs, _ := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "c-bot", Scope: terdut.ScopeTeam, TeamID: &other.ID})
	for _, victim := range []*terdut.ServiceAccount{ops, theirs} {
		cr := tenantAccount(victim.Name, own.ID)
		extclient.SetExternalID(cr, victim.ID)
		if err := f.delete(t, cr); err != nil {
			t.Fatalf("deleting the MR naming %q: %v", victim.Name, err)
		}
		// Even a Delete the reconciler calls after an Observe of its own.
		if _, err := f.e.Delete(t.Context(), cr); err != nil {
			t.Fatalf("Delete of the MR naming %q: %v", victim.Name, err)
		}
	}
	if n := f.double.Count("DELETE /api/service-accounts/{id}"); n != 0 {
		t.Errorf("%d DELETEs of service accounts, want 0: neither is the tenant's", n)
	}
	if n := len(f.double.Snapshot().ServiceAccounts); n != 2 {
		t.Errorf("%d accounts left, want 2: the instance account and the other team's", n)
	}
}

// A lookup by name that misses the account (a list one item short) while
// the MR is deleted must not let it go with the account, and its key, left
// on the server: the absence is waited out, and the account deleted.
func TestADeletedAccountALookupMissesIsDeletedAllTheSame(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	if err := f.reconcile(t, cr); err != nil {
		t.Fatal(err)
	}
	now := f.now
	f.e.absence = extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	f.e.absence.Clock = func() time.Time { return now }
	f.double.SetQuirks(terdutdouble.Quirks{ShortLists: true})
	for i := range 30 {
		now = now.Add(2 * time.Second)
		if i == 15 {
			f.double.SetQuirks(terdutdouble.Quirks{})
		}
		if err := f.delete(t, cr); err != nil {
			continue
		}
		f.e.observed = nil
		if o, err := f.e.Observe(t.Context(), cr); err == nil && !o.ResourceExists {
			break
		}
	}
	if n := len(f.double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("the MR let go with %d accounts left on the server", n)
	}
}
