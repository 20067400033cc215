package controllertest

import (
	"context"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpfake "github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// Scheme is a scheme with the core kinds and the provider's.
func Scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}

// NewManagedReconciler is crossplane-runtime's managed reconciler for the
// kind gvk over mgr, connecting with c: no initializers, no events, no
// references to resolve, plus opts.
func NewManagedReconciler[M resource.ModernManaged](mgr manager.Manager, gvk schema.GroupVersionKind, c managed.TypedExternalConnector[M], opts ...managed.ReconcilerOption) *managed.Reconciler {
	return managed.NewReconciler(mgr, resource.ManagedKind(gvk), append([]managed.ReconcilerOption{
		managed.WithTypedExternalConnector[M](c),
		managed.WithInitializers(),
		managed.WithRecorder(event.NewNopRecorder()),
		managed.WithReferenceResolver(managed.ReferenceResolverFn(func(context.Context, resource.Managed) error { return nil })),
	}, opts...)...)
}

// FakeManager is a manager whose client is kube, over scheme s.
func FakeManager(kube client.Client, s *runtime.Scheme) manager.Manager {
	return &xpfake.Manager{Client: kube, Scheme: s, Logger: logr.Discard()}
}

// CreatingServer is a server for one MR of kind M whose object exists once
// Create has run: Observe finds it by the external name Create sets ("7"),
// up to date and Available, as every kind's Observe says; create runs at the
// start of Create and what it returns is Create's (nil: nothing).
func CreatingServer[M resource.ModernManaged](create func(ctx context.Context, cr M) (managed.ExternalCreation, error)) *managed.TypedExternalClientFns[M] {
	return &managed.TypedExternalClientFns[M]{
		ObserveFn: func(_ context.Context, cr M) (managed.ExternalObservation, error) {
			exists := meta.GetExternalName(cr) != ""
			if exists {
				cr.SetConditions(xpv2.Available())
			}
			return managed.ExternalObservation{ResourceExists: exists, ResourceUpToDate: true}, nil
		},
		CreateFn: func(ctx context.Context, cr M) (managed.ExternalCreation, error) {
			var c managed.ExternalCreation
			if create != nil {
				var err error
				if c, err = create(ctx, cr); err != nil {
					return c, err
				}
			}
			meta.SetExternalName(cr, "7")
			return c, nil
		},
		DisconnectFn: func(context.Context) error { return nil },
	}
}

// ConnectTo connects every MR of kind M to ext.
func ConnectTo[M resource.ModernManaged](ext managed.TypedExternalClient[M]) managed.TypedExternalConnector[M] {
	return managed.TypedExternalConnectorFn[M](func(context.Context, M) (managed.TypedExternalClient[M], error) { return ext, nil })
}

// StatusCounting is a fake API server holding cr (with its status
// subresource) that counts the status updates it is sent.
func StatusCounting(s *runtime.Scheme, cr client.Object) (client.Client, func() int) {
	var mu sync.Mutex
	sent := 0
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cr).WithStatusSubresource(cr).WithInterceptorFuncs(interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			mu.Lock()
			sent++
			mu.Unlock()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}).Build()
	return kube, func() int {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}
