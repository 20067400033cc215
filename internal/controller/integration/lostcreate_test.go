package integration

import (
	"testing"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
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
	y := seed(t, f, teamID) // MR team-a/prod-alertmanager (uid-1) holds it; its key is in Secret `secret`
	x := integ(teamID, withName("staging-am"), withDeletion())
	x.SetName("staging-alertmanager")
	x.SetUID("uid-2")
	now := controllertest.Now()
	absence := generic.NewAbsence(generic.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{
		api: f.Client, kube: kube(t, y.secret), record: rec, absence: absence, now: func() time.Time { return now },
		adopter: generic.Adopter{Record: rec, Since: now.Add(-time.Hour)},
	}
	for range 6 {
		now = now.Add(20 * time.Second)
		o, err := e.Observe(t.Context(), x)
		if err != nil {
			continue
		}
		if !o.ResourceExists {
			break
		}
		if _, err := e.Delete(t.Context(), x); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.Server.Snapshot().Integrations); n != 1 {
		t.Errorf("deleting an Integration that never made anything deleted integration %d, held by another MR (%d integrations left)", y.id, n)
	}
}
