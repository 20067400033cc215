package team

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// TestTeamMadeAgainSaysSo: a team deleted outside Kubernetes
// is made again with a new ID; that must not be silent, the old team's key
// Secret must go, and the old ID is kept for the children to follow.
func TestTeamMadeAgainSaysSo(t *testing.T) {
	f := controllertest.New(t)
	old := f.Team(t, "Platform")
	k := &keys{held: map[int64]bool{old: true}}
	rec := &controllertest.Recorder{}
	cr := team(withID(old))
	cr.Status.AtProvider.ID = old
	if err := f.Client.DeleteTeam(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, keys: k}
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Fatalf("Observe of a deleted team = %+v, %v", o, err)
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	id, _, _ := extclient.ExternalID(cr)
	if id == old {
		t.Fatal("the team was not made again")
	}
	if !slices.Contains(rec.Reasons(), extclient.ReasonRecreated) {
		t.Errorf("events %v, want a %s Warning naming the old and new IDs", rec.Reasons(), extclient.ReasonRecreated)
	}
	if k.held[old] {
		t.Error("the gone team's key Secret is left behind")
	}
	if !slices.Contains(cr.Status.AtProvider.PreviousIDs, old) {
		t.Errorf("status.atProvider.previousIds = %v, want it to hold %d", cr.Status.AtProvider.PreviousIDs, old)
	}
	// Observed again, the Team keeps the old ID for its children.
	e = &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, keys: k}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if cr.Status.AtProvider.ID != id || !slices.Contains(cr.Status.AtProvider.PreviousIDs, old) {
		t.Errorf("after Observe: id %d previousIds %v; want %d and %d kept", cr.Status.AtProvider.ID, cr.Status.AtProvider.PreviousIDs, id, old)
	}
	if _, err := f.Client.GetTeam(t.Context(), id); err != nil || meta.GetExternalName(cr) == "" {
		t.Errorf("new team %d: %v", id, err)
	}
}

// TestAdoptsOnlyWhatItsOwnCreateMade a Team whose display name
// is a team made by hand before the Team existed must not take it over (and
// deleting the Team then delete it); one its own interrupted create made is
// adopted.
func TestAdoptsOnlyWhatItsOwnCreateMade(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform") // made at controllertest.Now()
	later := team()
	later.CreationTimestamp = metav1.NewTime(controllertest.Now().Add(time.Hour))
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}, Object: later, Since: later.CreationTimestamp.Time}}
	if _, err := e.Create(t.Context(), later); err == nil || meta.GetExternalName(later) != "" {
		t.Errorf("a Team made an hour after the server's team adopted it (err %v, external name %q)", err, meta.GetExternalName(later))
	}
	if c := later.GetCondition(xpv2.TypeReady); c.Reason != extclient.ReasonResourceNotOwned {
		t.Errorf("Ready reason %q, want %s", c.Reason, extclient.ReasonResourceNotOwned)
	}
	earlier := team()
	earlier.CreationTimestamp = metav1.NewTime(controllertest.Now().Add(-time.Minute))
	e = &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}, Object: earlier, Since: earlier.CreationTimestamp.Time}}
	if _, err := e.Create(t.Context(), earlier); err != nil || meta.GetExternalName(earlier) != extclient.FormatID(id) {
		t.Errorf("a Team whose interrupted create made the team: err %v, external name %q; want %d adopted", err, meta.GetExternalName(earlier), id)
	}
}
