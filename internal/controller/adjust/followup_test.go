package adjust

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestACreatedMRIsObservedInTheSameTurn: the reconcile that creates an MR's
// object goes on to observe it, once the cache holds what the create wrote,
// so the MR is Available when that reconcile returns, with one status
// update: crossplane-runtime alone leaves it Creating and asks to be run
// again (after a second's backoff and the MR's next budget slot). A cache
// that does not catch up leaves it to that retry: nothing is observed on a
// cache that cannot show the create succeeded.
func TestACreatedMRIsObservedInTheSameTurn(t *testing.T) {
	s := controllertest.Scheme(t)
	for _, tc := range []struct {
		name        string
		followUp    bool
		staleCache  bool
		wantObserve int
		wantReady   xpv2.ConditionReason
		wantRequeue bool
	}{
		{name: "followed up", followUp: true, wantObserve: 2, wantReady: xpv2.ReasonAvailable},
		{name: "crossplane-runtime alone", wantObserve: 1, wantReady: xpv2.ReasonCreating, wantRequeue: true},
		{name: "the cache lags", followUp: true, staleCache: true, wantObserve: 1, wantReady: xpv2.ReasonCreating, wantRequeue: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"}}
			kube, sent := controllertest.StatusCounting(s, cr)
			server := controllertest.CreatingServer[*v1alpha1.Team](nil)
			observed, creates := 0, 0
			observe, create := server.ObserveFn, server.CreateFn
			server.ObserveFn = func(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalObservation, error) {
				observed++
				return observe(ctx, cr)
			}
			server.CreateFn = func(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalCreation, error) {
				creates++
				return create(ctx, cr)
			}
			q := NewQuietStatus()
			q.Hold = 100 * time.Millisecond
			var r reconcile.Reconciler = controllertest.NewManagedReconciler[*v1alpha1.Team](q.Manager(controllertest.FakeManager(kube, s)), v1alpha1.TeamGroupVersionKind, controllertest.ConnectTo(server))
			if tc.followUp {
				var cache client.Reader = kube
				if tc.staleCache {
					cache = fake.NewClientBuilder().WithScheme(s).WithObjects(cr.DeepCopy()).Build()
				}
				r = FollowUp{Inner: r, Cache: cache, New: func() client.Object { return &v1alpha1.Team{} }, Wait: 50 * time.Millisecond}
			}
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "a"}}
			res, err := r.Reconcile(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(q.Hold + 300*time.Millisecond)
			if observed != tc.wantObserve || creates != 1 {
				t.Errorf("observed %d times and created %d, want %d and 1", observed, creates, tc.wantObserve)
			}
			//nolint:staticcheck // Requeue is what crossplane-runtime's reconciler returns after a create.
			if res.Requeue != tc.wantRequeue || (!tc.wantRequeue && res.RequeueAfter <= 0) {
				t.Errorf("result %+v: want requeue %v, else the poll", res, tc.wantRequeue)
			}
			if got := sent(); got != 1 {
				t.Errorf("status updates sent: %d, want 1", got)
			}
			stored := &v1alpha1.Team{}
			if err := kube.Get(t.Context(), req.NamespacedName, stored); err != nil {
				t.Fatal(err)
			}
			if c := stored.GetCondition(xpv2.TypeReady); c.Reason != tc.wantReady {
				t.Errorf("stored Ready reason %q, want %q", c.Reason, tc.wantReady)
			}
		})
	}
}
