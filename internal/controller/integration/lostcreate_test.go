package integration

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// An Integration that never created anything (no external name, no
// create of its own) and whose writeConnectionSecretToRef names the Secret of
// another Integration MR of its namespace (a copy-paste mistake; its own
// Create is refused by ConnectionSecretMustBeControllableBy) is deleted. It
// must not delete the other MR's integration: that one is held by another MR
// and this MR never made it. Only a Secret the MR controls shows what its
// creates did (here no ownership check refuses the integration, so the
// Secret's control alone keeps it).
func TestDeletingAnMRThatMadeNothingLeavesTheIntegrationOfTheSecretItNames(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	y := existing(t, f, teamID) // MR team-a/prod-alertmanager (uid-1) holds it; its key is in Secret `secret`
	x := integ(teamID, withName("staging-am"), withDeletion())
	x.SetName("staging-alertmanager")
	x.SetUID("uid-2")
	now := controllertest.Now()
	e := onClock(f, kube(t, y.secret), &now, now.Add(-time.Hour))
	controllertest.Deleting(t, e, 6, func() *v1alpha1.Integration { return x }, func() { now = now.Add(20 * time.Second) })
	if n := len(f.Server.Snapshot().Integrations); n != 1 {
		t.Errorf("deleting an Integration that never made anything deleted integration %d, held by another MR (%d integrations left)", y.id, n)
	}
}

// Deleting an Integration deletes at most an integration of its own name.
// The marks of a create attempt live in the connection Secret, which anyone
// who may write Secrets in the namespace can edit: forged there on an MR that
// never created anything, they do not make deleting it delete an integration
// of another name (and so revoke a key some Alertmanager sends with).
func TestForgedCreateMarksDeleteNoIntegrationOfAnotherName(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	hand, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "billing-am") // by hand, after the MR
	if err != nil {
		t.Fatal(err)
	}
	x := integ(teamID, withDeletion()) // named prod-am; never created anything
	s := resource.LocalConnectionSecretFor(x, v1alpha1.IntegrationGroupVersionKind)
	s.Annotations = map[string]string{AnnotationCreating: "1970-01-01T00:00:00Z", AnnotationCreatingName: "billing-am"}
	now := controllertest.Now()
	e := onClock(f, kube(t, s), &now, now.Add(-time.Hour))
	controllertest.Deleting(t, e, 6, func() *v1alpha1.Integration { return x }, func() { now = now.Add(20 * time.Second) })
	if left := f.Server.Snapshot().Integrations; len(left) != 1 || left[0].ID != hand.ID {
		t.Errorf("integrations left %d: want the hand-made billing-am (%d); deleting an MR named prod-am deleted an integration of another name", len(left), hand.ID)
	}
}

// onClock is an Integration's external whose clock and absence read *now,
// which the test moves; since is when the provider started (zero: whenever).
func onClock(f *controllertest.Fixture, k client.Client, now *time.Time, since time.Time) *external {
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return *now }
	rec := &controllertest.Recorder{}
	return &external{
		api: f.Client, kube: k, record: rec, absence: absence, now: func() time.Time { return *now },
		adopter: extclient.Adopter{Record: rec, Since: since},
	}
}

// fromStore reads mr as the API server holds it now.
func fromStore(t *testing.T, k client.Client, mr *v1alpha1.Integration) func() *v1alpha1.Integration {
	t.Helper()
	return func() *v1alpha1.Integration {
		x := &v1alpha1.Integration{}
		if err := k.Get(t.Context(), client.ObjectKeyFromObject(mr), x); err != nil {
			t.Fatal(err)
		}
		return x
	}
}
