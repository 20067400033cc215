package generic

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// TestANewChildWaitsForItsTeamWithoutAWrite: a switch applied together
// with its Team is not reconciled (nothing written, no budget booked) while
// the Team is being created (or not in the cache yet); it is as soon as the
// Team holds its object, or at once if the Team fails or the switch is past
// TeamGrace.
func TestANewChildWaitsForItsTeamWithoutAWrite(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	creating := func(*v1alpha1.Team) {}
	held := func(t *v1alpha1.Team) { meta.SetExternalName(t, "12"); t.Status.AtProvider.ID = 12 }
	named := func(t *v1alpha1.Team) { meta.SetExternalName(t, "12") } // created, not yet observed
	failing := func(t *v1alpha1.Team) { t.SetConditions(xpv2.ReconcileError(context.DeadlineExceeded)) }
	for _, tc := range []struct {
		name string
		team func(*v1alpha1.Team) // nil: no such Team
		age  time.Duration
		want bool // reconciled now
	}{
		{name: "team being created", team: creating, age: time.Second},
		{name: "team created, not observed", team: named, age: time.Second},
		{name: "team holds its object", team: held, age: time.Second, want: true},
		{name: "team failing", team: failing, age: time.Second, want: true},
		{name: "team not in the cache yet", age: time.Second},
		{name: "no such team past the grace", age: TeamGrace, want: true},
		{name: "past the grace", team: creating, age: TeamGrace, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sw", CreationTimestamp: metav1.NewTime(now.Add(-tc.age))}}
			sw.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: "t"}
			objs := []client.Object{sw}
			if tc.team != nil {
				team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "t"}}
				tc.team(team)
				objs = append(objs, team)
			}
			kube := fakeBuilder(t).WithObjects(objs...).Build()
			ran := 0
			w := TeamWait[*v1alpha1.DeadmanSwitch]{
				Inner: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
					ran++
					return reconcile.Result{}, nil
				}),
				Kube: kube,
				New:  func() *v1alpha1.DeadmanSwitch { return &v1alpha1.DeadmanSwitch{} },
				Refs: func(cr *v1alpha1.DeadmanSwitch) []string {
					return TeamRefKeys(cr.Spec.ForProvider.TeamIDRef, cr.Spec.ForProvider.TeamID)
				},
				Now: func() time.Time { return now },
			}
			res, err := w.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "sw"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := ran == 1; got != tc.want {
				t.Fatalf("reconciled now: %t, want %t", got, tc.want)
			}
			if !tc.want && (res.RequeueAfter <= 0 || res.RequeueAfter > teamRecheck) {
				t.Errorf("waiting, asked again after %v; want within (0, %v]", res.RequeueAfter, teamRecheck)
			}
		})
	}
}
