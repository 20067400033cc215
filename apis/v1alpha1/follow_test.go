package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// TestChildFollowsItsTeamMadeAgain: a team deleted outside
// Kubernetes is made again by its Team with a new ID. A child whose
// teamIdRef names that Team must follow it to the new ID, not keep the old
// one (and stay TeamNotInNamespace for good); a child whose teamId is not a
// previous ID of its Team does not move.
func TestChildFollowsItsTeamMadeAgain(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	team := &Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	meta.SetExternalName(team, "12")
	team.Status.AtProvider.ID = 12
	team.Status.AtProvider.PreviousIDs = []int64{7}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(team).Build()

	child := func(teamID int64) *DeadmanSwitch {
		sw := &DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "watchdog"}}
		sw.Spec.ForProvider.TeamID = &teamID
		sw.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: "web"}
		return sw
	}
	moved := child(7)
	if err := moved.ResolveReferences(t.Context(), kube); err != nil {
		t.Fatal(err)
	}
	if got := *moved.Spec.ForProvider.TeamID; got != 12 {
		t.Errorf("a child of the team made again has teamId %d, want 12", got)
	}
	stays := child(9)
	if err := stays.ResolveReferences(t.Context(), kube); err != nil {
		t.Fatal(err)
	}
	if got := *stays.Spec.ForProvider.TeamID; got != 9 {
		t.Errorf("a child whose teamId is no previous ID of its Team moved to %d", got)
	}
}
