package adjust

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestCreatingWritesTheMRTwice: crossplane-runtime's reconciler creating an
// object wrote the MR three times before the status (its finalizer, then
// external-create-pending, then external-create-succeeded); the finalizer
// now rides on the pending update. What must not change: the finalizer is
// stored before the object is created on the server.
func TestCreatingWritesTheMRTwice(t *testing.T) {
	s := controllertest.Scheme(t)
	cr := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"}}
	updates := 0
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cr).WithStatusSubresource(cr).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			updates++
			return c.Update(ctx, o, opts...)
		},
	}).Build()
	finalizedBeforeCreate := false
	creates := 0
	connect := controllertest.ConnectTo(FinalizedOnCreate(controllertest.CreatingServer(func(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalCreation, error) {
		creates++
		stored := &v1alpha1.Team{}
		err := kube.Get(ctx, client.ObjectKeyFromObject(cr), stored)
		finalizedBeforeCreate = meta.FinalizerExists(stored, managed.FinalizerName)
		return managed.ExternalCreation{}, err
	})))
	r := controllertest.NewManagedReconciler[*v1alpha1.Team](controllertest.FakeManager(kube, s), v1alpha1.TeamGroupVersionKind, connect)
	if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	if creates != 1 || !finalizedBeforeCreate {
		t.Fatalf("created %d times, finalizer stored before the create: %t; want once, true", creates, finalizedBeforeCreate)
	}
	if updates != 2 {
		t.Errorf("the MR was updated %d times to create its object, want 2 (pending with the finalizer, then succeeded)", updates)
	}
}

// TestTheFinalizerIsAddedOnlyBeforeACreate: Observe adds the finalizer in
// memory only when nothing exists on the server and the MR is not being
// deleted; otherwise the reconciler's own update adds it (or nothing does).
func TestTheFinalizerIsAddedOnlyBeforeACreate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exists  bool
		deleted bool
		want    bool
	}{
		{name: "absent", want: true},
		{name: "exists", exists: true},
		{name: "deleted", deleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &v1alpha1.Team{}
			if tc.deleted {
				now := metav1.Now()
				cr.SetDeletionTimestamp(&now)
			}
			e := FinalizedOnCreate[*v1alpha1.Team](&managed.TypedExternalClientFns[*v1alpha1.Team]{
				ObserveFn: func(context.Context, *v1alpha1.Team) (managed.ExternalObservation, error) {
					return managed.ExternalObservation{ResourceExists: tc.exists}, nil
				},
			})
			if _, err := e.Observe(t.Context(), cr); err != nil {
				t.Fatal(err)
			}
			if got := meta.FinalizerExists(cr, managed.FinalizerName); got != tc.want {
				t.Errorf("finalizer added: %t, want %t", got, tc.want)
			}
		})
	}
}
