package generic

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestAKindsTypesFollowFromItsObject: the controller's name, the
// GroupVersionKind the CRD gate waits for and the list the state metrics
// count are found from the kind's Go type alone; a type the scheme does
// not hold, or one that is not a managed resource, is refused at setup.
func TestAKindsTypesFollowFromItsObject(t *testing.T) {
	s := controllertest.Scheme(t)
	got, err := typesOf(s, &v1alpha1.DeadmanSwitch{})
	if err != nil {
		t.Fatal(err)
	}
	if got.gvk != v1alpha1.DeadmanSwitchGroupVersionKind || got.groupKind != v1alpha1.DeadmanSwitchGroupKind {
		t.Errorf("types of a DeadmanSwitch: %v, %q; want %v, %q", got.gvk, got.groupKind, v1alpha1.DeadmanSwitchGroupVersionKind, v1alpha1.DeadmanSwitchGroupKind)
	}
	if _, ok := got.list.(*v1alpha1.DeadmanSwitchList); !ok {
		t.Errorf("list of a DeadmanSwitch: %T, want *v1alpha1.DeadmanSwitchList", got.list)
	}
	if _, err := typesOf(s, &corev1.ConfigMap{}); err == nil {
		t.Error("a ConfigMap (no managed resource, not in the scheme) was taken for a kind")
	}
}

// TestChildOfTeam: a child's team is the one its spec names, else the one
// it observed; its Team reference and ID are the keys its Team's watch
// finds it by.
func TestChildOfTeam(t *testing.T) {
	k := ChildOfTeam(Kind[*v1alpha1.Integration]{Object: &v1alpha1.Integration{}})
	if k.TeamOf == nil || k.ObservedTeam == nil || k.TeamRefs == nil || k.Credentials == nil {
		t.Fatal("ChildOfTeam left a team-child option unset")
	}
	cr := &v1alpha1.Integration{}
	if id, known := k.TeamOf(cr); known {
		t.Errorf("a child naming no team belongs to team %d", id)
	}
	cr.Status.AtProvider.TeamID = 7
	if id, known := k.TeamOf(cr); !known || id != 7 || k.ObservedTeam(cr) != 7 {
		t.Errorf("observed in team 7: team %d (known %t), observed %d; want 7", id, known, k.ObservedTeam(cr))
	}
	nine := int64(9)
	cr.Spec.ForProvider.TeamID, cr.Spec.ForProvider.TeamIDRef = &nine, &xpv2.Reference{Name: "web"}
	if id, _ := k.TeamOf(cr); id != 9 {
		t.Errorf("spec names team 9, observed 7: team %d, want 9", id)
	}
	if refs := k.TeamRefs(cr); len(refs) != 2 || refs[0] != "ref:web" || refs[1] != "id:9" {
		t.Errorf("team refs %q, want [ref:web id:9]", refs)
	}
}
