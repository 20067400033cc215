package adjust

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// TestTheReconcilersOwnWritesDoNotWakeTheMR: the writes crossplane-runtime's
// reconciler makes on the way to a create (and the reference resolver's
// first teamId) are not events; any other change of the desired state is.
func TestTheReconcilersOwnWritesDoNotWakeTheMR(t *testing.T) {
	id := func(v int64) *int64 { return &v }
	base := func() *v1alpha1.DeadmanSwitch {
		sw := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "sw", Generation: 1}}
		sw.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: "t"}
		sw.Spec.ForProvider.Name = "watchdog"
		return sw
	}
	for _, tc := range []struct {
		name   string
		change func(sw *v1alpha1.DeadmanSwitch)
		wake   bool
	}{
		{name: "create pending", change: func(sw *v1alpha1.DeadmanSwitch) { meta.SetExternalCreatePending(sw, metav1.Now().Time) }},
		{name: "create succeeded with the external name", change: func(sw *v1alpha1.DeadmanSwitch) {
			meta.SetExternalCreateSucceeded(sw, metav1.Now().Time)
			meta.SetExternalName(sw, "70")
		}},
		{name: "the kind's own mark", change: func(sw *v1alpha1.DeadmanSwitch) {
			meta.AddAnnotations(sw, map[string]string{"example/mark": "now"})
		}},
		{name: "teamId resolved", change: func(sw *v1alpha1.DeadmanSwitch) { sw.Spec.ForProvider.TeamID = id(12); sw.Generation++ }},
		{name: "status only", change: func(sw *v1alpha1.DeadmanSwitch) { sw.Status.AtProvider.ID = 70 }},
		{name: "external name set by hand", change: func(sw *v1alpha1.DeadmanSwitch) { meta.SetExternalName(sw, "70") }, wake: true},
		{name: "paused", change: func(sw *v1alpha1.DeadmanSwitch) {
			meta.AddAnnotations(sw, map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
		}, wake: true},
		{name: "labels", change: func(sw *v1alpha1.DeadmanSwitch) { sw.SetLabels(map[string]string{"a": "b"}) }, wake: true},
		{name: "spec", change: func(sw *v1alpha1.DeadmanSwitch) { sw.Spec.ForProvider.Name = "other"; sw.Generation++ }, wake: true},
		{name: "teamId resolved and spec", change: func(sw *v1alpha1.DeadmanSwitch) {
			sw.Spec.ForProvider.TeamID = id(12)
			sw.Spec.ForProvider.Name = "other"
			sw.Generation++
		}, wake: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			n := o.DeepCopy()
			tc.change(n)
			if got := DesiredStateChanged("example/mark").Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tc.wake {
				t.Errorf("wakes the MR: %t, want %t", got, tc.wake)
			}
		})
	}
	t.Run("teamId changed", func(t *testing.T) {
		o := base()
		o.Spec.ForProvider.TeamID = id(12)
		n := o.DeepCopy()
		n.Spec.ForProvider.TeamID = id(13)
		n.Generation++
		if !DesiredStateChanged().Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}) {
			t.Error("a changed teamId does not wake the MR")
		}
	})
}

// A kind's own create-attempt marks (MarkAttempt before a re-create over an
// external name, UnmarkAttempt after a refused one) do not wake the MR.
func TestTheAttemptMarksDoNotWakeTheMR(t *testing.T) {
	o := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "t", Generation: 1}}
	meta.SetExternalName(o, "42")
	n := o.DeepCopy()
	meta.AddAnnotations(n, map[string]string{extclient.AnnotationCreateAttempted: "2026-12-07T21:00:00Z", extclient.AnnotationCreateAttemptedName: "Payments", extclient.AnnotationCreateAttemptedOver: "42"})
	p := DesiredStateChanged(extclient.AttemptAnnotations()...)
	if p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}) {
		t.Error("MarkAttempt's own write wakes the MR")
	}
	if p.Update(event.UpdateEvent{ObjectOld: n, ObjectNew: o}) {
		t.Error("UnmarkAttempt's own write wakes the MR")
	}
}
