package generic

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// TestAChildCreatedInItsRecreatedTeamIsDeleted: team-b's Team was recreated
// (old team 999 gone, team B now); the switch's teamIdRef followed it and
// Create made switch s2 in team B (external name s2). Until the next Observe
// its status still says switch 9999 in team 999. Deleted in that window, the
// gate refuses it (observed 999, teamId B): its finalizer goes and s2 stays
// in team B, which lives on, for good.
func TestAChildCreatedInItsRecreatedTeamIsDeleted(t *testing.T) {
	_, _, b, c := twoTeams(t, func(a, b int64) []client.Object {
		return []client.Object{mgTeam("team-a", "alpha", "ta", extclient.FormatID(a), "default", time.Hour), mgTeam("team-b", "beta", "tb", extclient.FormatID(b), "default", time.Hour)}
	})
	cpc := &v1alpha1.ClusterProviderConfig{}
	if err := c.Kube.Get(t.Context(), client.ObjectKey{Name: "default"}, cpc); err != nil {
		t.Fatal(err)
	}
	instance, _ := terdut.New(terdut.Options{Endpoint: cpc.Spec.Endpoint, Token: "tdk_instance"})
	s2, err := instance.CreateDeadmanSwitch(t.Context(), b, terdut.DeadmanSwitch{Name: "sw", Matcher: "job=x", Timeout: "5m", Severity: "critical"})
	if err != nil {
		t.Fatal(err)
	}
	cr := dms("team-b", "sw", b)
	meta.SetExternalName(cr, extclient.FormatID(s2.ID))
	cr.Status.AtProvider.ID, cr.Status.AtProvider.TeamID = 9999, 999
	now := metav1.Now()
	cr.DeletionTimestamp = &now
	_, err = c.Connect(t.Context(), cr)
	if c.got.Client == nil {
		t.Errorf("the deleting switch gets no client to delete its switch %d in team %d (err %v, Ready %q): it is left on the server", s2.ID, b, err, cr.GetCondition("Ready").Message)
	}
}
