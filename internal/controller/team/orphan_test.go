package team

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpfake "github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

// TestOrphanedTeamRevokesItsKeyInTheReconciler: TestOrphanedTeamRevokesItsKey
// calls Observe by hand. crossplane-runtime's reconciler (as Setup wires it,
// management policies on) removes the finalizer of a deleted MR whose
// policies lack Delete without ever connecting: Observe, and with it the
// revoke, never runs. The team's scoped key stays valid in its Secret.
func TestOrphanedTeamRevokesItsKeyInTheReconciler(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform")
	k := &keys{held: map[int64]bool{id: true}}
	cr := team(withID(id), withObserved(id, "Platform", "", ""))
	cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize})
	cr.Finalizers = []string{managed.FinalizerName}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cr).WithStatusSubresource(cr).Build()
	if err := kube.Delete(t.Context(), cr); err != nil { // the finalizer keeps it, being deleted
		t.Fatal(err)
	}
	connects := 0
	connect := managed.TypedExternalConnectorFn[*v1alpha1.Team](func(context.Context, *v1alpha1.Team) (managed.TypedExternalClient[*v1alpha1.Team], error) {
		connects++
		return &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}, keys: k}, nil
	})
	r := managed.NewReconciler(&xpfake.Manager{Client: kube, Scheme: s, Logger: logr.Discard()}, resource.ManagedKind(v1alpha1.TeamGroupVersionKind),
		managed.WithTypedExternalConnector[*v1alpha1.Team](connect),
		managed.WithInitializers(),
		managed.WithRecorder(event.NewNopRecorder()),
		managed.WithManagementPolicies(),
		managed.WithReferenceResolver(managed.ReferenceResolverFn(func(context.Context, resource.Managed) error { return nil })))
	wrapped := generic.Orphaning[*v1alpha1.Team]{Inner: r, Kube: kube, New: func() *v1alpha1.Team { return &v1alpha1.Team{} }, Before: func(ctx context.Context, cr *v1alpha1.Team) error {
		return revokeOrphaned(ctx, cr, k)
	}}
	for range 3 {
		if _, err := wrapped.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cr)}); err != nil {
			t.Fatal(err)
		}
	}
	got := &v1alpha1.Team{}
	gone := kube.Get(t.Context(), client.ObjectKeyFromObject(cr), got) != nil || !meta.FinalizerExists(got, managed.FinalizerName)
	if gone && k.held[id] {
		t.Errorf("the orphaned Team's finalizer went (%d connects) while its team's scoped key is still kept: a valid key nobody owns or revokes", connects)
	}
	if !gone {
		t.Error("the orphaned Team's finalizer stayed")
	}
	if _, err := f.Client.GetTeam(t.Context(), id); err != nil {
		t.Errorf("the orphaned team itself is gone from the server: %v", err)
	}
}
