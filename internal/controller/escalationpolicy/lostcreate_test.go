package escalationpolicy

import (
	"net/http"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
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
	meta.SetExternalCreatePending(stored, time.Now()) // as the runtime writes it before Create
	e := &external{api: f.Client}
	if _, err := e.Observe(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPut, Route: "/api/teams/{id}/escalation", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), stored); err == nil {
		t.Fatal("setup: the PUT's answer was not lost")
	}
	stored.SetAnnotations(map[string]string{meta.AnnotationKeyExternalCreatePending: stored.GetAnnotations()[meta.AnnotationKeyExternalCreatePending]}) // no external name was recorded
	if got, err := f.Client.GetEscalationPolicy(t.Context(), teamID); err != nil || got.IsEmpty() {
		t.Fatalf("setup: policy %+v, %v; want the lost PUT written", got, err)
	}
	withDeletion()(stored)
	deleting(t, &external{api: f.Client}, func() *v1alpha1.EscalationPolicy { return stored.DeepCopy() })
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
	meta.SetExternalCreatePending(stored, time.Now())
	deleting(t, &external{api: f.Client}, func() *v1alpha1.EscalationPolicy { return stored.DeepCopy() })
	got, err := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if err != nil || got.FallbackTopic != "set-by-hand" {
		t.Errorf("team %d's policy after deleting an MR that never wrote it: %+v, %v; want the hand-set one kept", teamID, got, err)
	}
}
