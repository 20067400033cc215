package adjust

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestAnUnchangedStatusIsNotSent: crossplane-runtime's reconciler, run
// the way Setup runs it, reconciles an up-to-date MR three times; the API
// server gets the status of the first (it changed: Available) and of the
// third (the server then failed: ReconcileError), not the second, which
// changed nothing. Without QuietStatus all three are sent.
func TestAnUnchangedStatusIsNotSent(t *testing.T) {
	s := controllertest.Scheme(t)
	for _, tc := range []struct {
		name  string
		quiet *QuietStatus
		want  int
	}{
		{name: "quiet", quiet: NewQuietStatus(), want: 2},
		{name: "crossplane-runtime alone", want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &v1alpha1.EscalationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p", Finalizers: []string{"finalizer.managedresource.crossplane.io"}}}
			meta.SetExternalName(cr, "7")
			kube, sent := controllertest.StatusCounting(s, cr)
			var observeErr error
			server := managed.TypedExternalConnectorFn[*v1alpha1.EscalationPolicy](func(context.Context, *v1alpha1.EscalationPolicy) (managed.TypedExternalClient[*v1alpha1.EscalationPolicy], error) {
				return &managed.TypedExternalClientFns[*v1alpha1.EscalationPolicy]{
					ObserveFn: func(context.Context, *v1alpha1.EscalationPolicy) (managed.ExternalObservation, error) {
						return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, observeErr
					},
					DisconnectFn: func(context.Context) error { return nil },
				}, nil
			})
			r := controllertest.NewManagedReconciler[*v1alpha1.EscalationPolicy](tc.quiet.Manager(controllertest.FakeManager(kube, s)), v1alpha1.EscalationPolicyGroupVersionKind, server)
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "p"}}
			for i := range 3 {
				if i == 2 {
					observeErr = errors.New("terdut-server answered 500")
				}
				if _, err := r.Reconcile(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			if got := sent(); got != tc.want {
				t.Errorf("status updates sent: %d, want %d", got, tc.want)
			}
			got := &v1alpha1.EscalationPolicy{}
			if err := kube.Get(t.Context(), req.NamespacedName, got); err != nil {
				t.Fatal(err)
			}
			if c := got.GetCondition("Synced"); c.Reason != "ReconcileError" {
				t.Errorf("stored Synced reason %q, want ReconcileError: the changed status must reach the server", c.Reason)
			}
		})
	}
}

// TestTheCreatingStatusIsHeldBack: crossplane-runtime writes an MR's status
// right after its create (Ready=False Creating) and again when the next
// reconcile observes it (Available); the first is held back and, when the
// second comes within the hold, never sent. When none comes, it is sent at
// the hold's end: a user sees Creating late, never not at all.
func TestTheCreatingStatusIsHeldBack(t *testing.T) {
	s := controllertest.Scheme(t)
	for _, tc := range []struct {
		name     string
		hold     time.Duration
		observe  bool // reconcile again after the create
		want     int
		wantLast xpv2.ConditionReason
	}{
		{name: "observed within the hold", hold: 200 * time.Millisecond, observe: true, want: 1, wantLast: xpv2.ReasonAvailable},
		{name: "nothing within the hold", hold: 50 * time.Millisecond, want: 1, wantLast: xpv2.ReasonCreating},
		{name: "crossplane-runtime alone", observe: true, want: 2, wantLast: xpv2.ReasonAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"}}
			kube, sent := controllertest.StatusCounting(s, cr)
			connect := controllertest.ConnectTo(controllertest.CreatingServer[*v1alpha1.Team](nil))
			q := NewQuietStatus()
			q.Hold = tc.hold
			r := controllertest.NewManagedReconciler[*v1alpha1.Team](q.Manager(controllertest.FakeManager(kube, s)), v1alpha1.TeamGroupVersionKind, connect)
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "a"}}
			if _, err := r.Reconcile(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			if tc.observe {
				if _, err := r.Reconcile(t.Context(), req); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(tc.hold + 300*time.Millisecond)
			if got := sent(); got != tc.want {
				t.Errorf("status updates sent: %d, want %d", got, tc.want)
			}
			stored := &v1alpha1.Team{}
			if err := kube.Get(t.Context(), req.NamespacedName, stored); err != nil {
				t.Fatal(err)
			}
			if c := stored.GetCondition(xpv2.TypeReady); c.Reason != tc.wantLast {
				t.Errorf("stored Ready reason %q, want %q", c.Reason, tc.wantLast)
			}
		})
	}
}
