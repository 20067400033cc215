package escalationpolicy

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// deleting reconciles a policy being deleted until it lets go.
func deleting(t *testing.T, e *external, cr func() *v1alpha1.EscalationPolicy) {
	t.Helper()
	if !controllertest.Deleting(t, e, 5, cr, func() {}) {
		t.Fatal("the EscalationPolicy did not let go")
	}
}

// An EscalationPolicy's create (a PUT of the whole policy) is written on the
// server and its answer lost, so no team is recorded; the MR is then
// deleted. The policy it wrote is emptied, not left paging the team's people
// with nobody managing it.
func TestDeletingAfterALostPutEmptiesThePolicyItWrote(t *testing.T) {
	f, teamID, _ := fixture(t)
	stored := policy(teamID)
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(stored.DeepCopy()).Build()
	e := &external{api: f.Client, kube: kube}
	cr := stored.DeepCopy()
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPut, Route: "/api/teams/{id}/escalation", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("setup: the PUT's answer was not lost")
	}
	if got, err := f.Client.GetEscalationPolicy(t.Context(), teamID); err != nil || got.IsEmpty() {
		t.Fatalf("setup: policy %+v, %v; want the lost PUT written", got, err)
	}
	get := func() *v1alpha1.EscalationPolicy {
		x := &v1alpha1.EscalationPolicy{}
		if err := kube.Get(t.Context(), client.ObjectKeyFromObject(stored), x); err != nil {
			t.Fatal(err)
		}
		withDeletion()(x)
		return x
	}
	deleting(t, &external{api: f.Client, kube: kube}, get)
	if got, err := f.Client.GetEscalationPolicy(t.Context(), teamID); err != nil || !got.IsEmpty() {
		t.Errorf("team %d's policy after deleting the MR whose PUT it was: %+v, %v; want it emptied", teamID, got, err)
	}
}

// A policy the team holds that is not what the MR writes (the MR's PUT was
// never written; someone set this one by hand) stays when the MR is deleted.
func TestDeletingAfterAnUnwrittenPutLeavesAnotherPolicy(t *testing.T) {
	f, teamID, alice := fixture(t)
	other := serverPolicy(alice)
	other.FallbackTopic = "set-by-hand"
	if err := f.Client.PutEscalationPolicy(t.Context(), teamID, other); err != nil {
		t.Fatal(err)
	}
	stored := policy(teamID, withDeletion())
	// a PUT marked (as MarkAttempt writes it) and never written
	meta.AddAnnotations(stored, map[string]string{extclient.AnnotationCreateAttempted: time.Now().UTC().Format(time.RFC3339)})
	deleting(t, &external{api: f.Client}, func() *v1alpha1.EscalationPolicy { return stored.DeepCopy() })
	got, err := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if err != nil || got.FallbackTopic != "set-by-hand" {
		t.Errorf("team %d's policy after deleting an MR that never wrote it: %+v, %v; want the hand-set one kept", teamID, got, err)
	}
}

// An EP whose Create was refused (ResourceNotOwned: another EP held the
// team's policy) wrote nothing. The runtime still wrote create-pending before
// that Create (and create-failed after). The holder then goes leaving its
// policy (deletionPolicy Orphan, or managementPolicies without Delete, e.g.
// an Observe-only import), and the refused EP (same spec) is deleted: it
// must not empty a policy it never wrote.
func TestARefusedCreateEmptiesNoPolicyItNeverWrote(t *testing.T) {
	r := aSecondPolicy(t)
	f, teamID, kube, owners, first, second, e := r.f, r.teamID, r.kube, r.owners, r.first, r.second, r.e
	meta.SetExternalCreatePending(second, time.Now()) // the runtime, before Create
	if _, err := e.Create(t.Context(), second); !extclient.IsNotOwned(err) {
		t.Fatalf("setup: Create: %v; want ResourceNotOwned", err)
	}
	meta.SetExternalCreateFailed(second, time.Now()) // the runtime, after the refused Create

	// The holder goes, leaving its policy (Orphan).
	if err := kube.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	withDeletion()(second)
	deleting(t, &external{api: f.Client, adoptable: owners.Adoptable(second)}, func() *v1alpha1.EscalationPolicy { return second.DeepCopy() })
	got, err := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if err != nil || got.IsEmpty() {
		t.Errorf("team %d's policy after deleting an EP whose only Create was refused (it never PUT): %+v, %v; want the orphaned policy kept", teamID, got, err)
	}
}

// An EscalationPolicy's team is deleted outside Kubernetes and made again;
// its teamId follows, and the PUT of its policy to the new team commits with
// its answer lost. The external name still names the old team. Deleting the
// MR empties the policy that PUT wrote (no other MR holds it, and it is
// exactly this MR's), instead of leaving it paging with nobody managing it.
func TestDeletingAfterALostRePutEmptiesThePolicyItWrote(t *testing.T) {
	lostRePut(t, true)
}

// As above for an EscalationPolicy that imported its team's policy
// (external name set by hand, so no create of its own was ever recorded).
func TestDeletingAnImportedPolicyAfterALostRePutEmptiesThePolicyItWrote(t *testing.T) {
	lostRePut(t, false)
}

// lostRePut: the MR's team goes outside Kubernetes, its teamId follows a
// team made in its place, the PUT there commits with its answer lost, and
// the MR is deleted; created says whether the MR had recorded a create of
// its own (else it imported the old team's policy).
func lostRePut(t *testing.T, created bool) {
	t.Helper()
	f, old, _ := fixture(t)
	stored := policy(old, withID(old))
	stored.Status.AtProvider.TeamID = old
	if created {
		meta.SetExternalCreateSucceeded(stored, time.Now().Add(-time.Hour))
	}
	if err := f.Client.DeleteTeam(t.Context(), old); err != nil { // outside Kubernetes
		t.Fatal(err)
	}
	nu := f.Team(t, "Platform")
	stored.Spec.ForProvider.TeamID = &nu // followed its Team
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(stored.DeepCopy()).Build()
	get := func() *v1alpha1.EscalationPolicy {
		x := &v1alpha1.EscalationPolicy{}
		if err := kube.Get(t.Context(), client.ObjectKeyFromObject(stored), x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	e := &external{api: f.Client, kube: kube}
	cr := get()
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Fatalf("setup: Observe %+v, %v; want the policy to be made on team %d", o, err, nu)
	}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPut, Route: "/api/teams/{id}/escalation", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("setup: the PUT's answer was not lost")
	}
	if got, err := f.Client.GetEscalationPolicy(t.Context(), nu); err != nil || got.IsEmpty() {
		t.Fatalf("setup: policy %+v, %v; want the lost PUT written", got, err)
	}
	deleting(t, &external{api: f.Client, kube: kube}, func() *v1alpha1.EscalationPolicy { x := get(); withDeletion()(x); return x })
	if got, err := f.Client.GetEscalationPolicy(t.Context(), nu); err != nil || !got.IsEmpty() {
		t.Errorf("team %d's policy after deleting the EscalationPolicy whose lost PUT wrote it: %+v, %v; want it emptied", nu, got, err)
	}
}

// A PUT to one team is marked and its answer lost; the spec's teamId is then
// changed to a second team, whose policy someone set by hand to exactly
// what the MR asks for, and the MR is deleted. That policy was never this
// MR's PUT (the mark names the first team): it stays.
func TestDeletingAfterALostPutToAnotherTeamLeavesThisTeamsPolicy(t *testing.T) {
	f, first, alice := fixture(t)
	second := f.Team(t, "Payments")
	if err := f.Client.PutEscalationPolicy(t.Context(), second, serverPolicy(alice)); err != nil { // by hand, equal to the spec
		t.Fatal(err)
	}
	stored := policy(second, withDeletion())
	// the lost PUT's mark, as MarkAttempt wrote it, for the first team
	meta.AddAnnotations(stored, map[string]string{extclient.AnnotationCreateAttempted: time.Now().UTC().Format(time.RFC3339), extclient.AnnotationCreateAttemptedName: extclient.FormatID(first)})
	deleting(t, &external{api: f.Client}, func() *v1alpha1.EscalationPolicy { return stored.DeepCopy() })
	if got, err := f.Client.GetEscalationPolicy(t.Context(), second); err != nil || got.IsEmpty() {
		t.Errorf("team %d's policy after deleting an MR whose lost PUT went to team %d: %+v, %v; want the hand-set one kept", second, first, got, err)
	}
}
