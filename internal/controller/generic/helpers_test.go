package generic

import (
	"context"
	"sync"
	"testing"

	"github.com/go-logr/logr"
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
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// testConnector is a Connector wired the way Setup wires one, over kube (a
// fake client that is also the "API reader"), for kind M listed by list. The
// Deps of the last Connect land in *got.
type testConnector[M resource.ModernManaged] struct {
	*Connector[M]
	got     *Deps
	servers *Servers
}

type connectorOption[M resource.ModernManaged] func(*Connector[M])

// withTeamOf makes M a kind that belongs to a team (ownership gate).
func withTeamOf[M resource.ModernManaged](teamOf func(M) (int64, bool)) connectorOption[M] {
	return func(c *Connector[M]) {
		c.Gates = []Gate[M]{ConsentGate[M](c.Kube, "crossplane-system", nil), OwnershipGate(c.Owners, teamOf, nil)}
	}
}

func newTestConnector[M resource.ModernManaged](kube client.Client, list func() resource.ManagedList, kind string, creds Credentials[M], opts ...connectorOption[M]) testConnector[M] {
	tc := testConnector[M]{got: &Deps{}}
	tc.servers = &Servers{Kube: kube, Clients: terdut.NewCache(), TeamKeys: &TeamKeys{Kube: kube, Namespace: "crossplane-system"}}
	owners := Owners{Kube: kube, NewList: list, Kind: kind}
	tc.Connector = &Connector[M]{
		Kube: kube, Usage: &tracked{}, Servers: tc.servers, Record: event.NewNopRecorder(),
		Gates:       []Gate[M]{ConsentGate[M](kube, "crossplane-system", nil), OwnershipGate[M](owners, nil, nil)},
		Credentials: creds,
		Owners:      owners,
		External: func(d Deps) managed.TypedExternalClient[M] {
			*tc.got = d
			return nil
		},
	}
	for _, o := range opts {
		o(tc.Connector)
	}
	return tc
}

func teams() resource.ManagedList { return &v1alpha1.TeamList{} }

// fakeBuilder is a fake client builder with the provider's kinds and the
// cache indexes Setup registers.
func fakeBuilder(t *testing.T) *fake.ClientBuilder {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(scheme(t))
	for _, o := range []client.Object{&v1alpha1.Team{}, &v1alpha1.DeadmanSwitch{}} {
		b = b.WithIndex(o, IndexExternalName, ExternalNameOf).WithIndex(o, IndexProviderConfig, ProviderConfigOf)
	}
	return b
}

// newManagedReconciler is crossplane-runtime's managed reconciler for the
// kind gvk over mgr, connecting with c: no initializers, no events, no
// references to resolve, plus opts.
func newManagedReconciler[M resource.ModernManaged](mgr manager.Manager, gvk schema.GroupVersionKind, c managed.TypedExternalConnector[M], opts ...managed.ReconcilerOption) *managed.Reconciler {
	return managed.NewReconciler(mgr, resource.ManagedKind(gvk), append([]managed.ReconcilerOption{
		managed.WithTypedExternalConnector[M](c),
		managed.WithInitializers(),
		managed.WithRecorder(event.NewNopRecorder()),
		managed.WithReferenceResolver(managed.ReferenceResolverFn(func(context.Context, resource.Managed) error { return nil })),
	}, opts...)...)
}

// fakeManager is a manager whose client is kube, over scheme s.
func fakeManager(kube client.Client, s *runtime.Scheme) manager.Manager {
	return &xpfake.Manager{Client: kube, Scheme: s, Logger: logr.Discard()}
}

// creatingServer is a server for one MR of kind M whose object exists once
// Create has run: Observe finds it by the external name Create sets ("7"),
// up to date and Available, as every kind's Observe says; create runs at the
// start of Create and what it returns is Create's (nil: nothing).
func creatingServer[M resource.ModernManaged](create func(ctx context.Context, cr M) (managed.ExternalCreation, error)) *managed.TypedExternalClientFns[M] {
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

// connectTo connects every MR of kind M to ext.
func connectTo[M resource.ModernManaged](ext managed.TypedExternalClient[M]) managed.TypedExternalConnector[M] {
	return managed.TypedExternalConnectorFn[M](func(context.Context, M) (managed.TypedExternalClient[M], error) { return ext, nil })
}

// statusCounting is a fake API server holding cr (with its status
// subresource) that counts the status updates it is sent.
func statusCounting(s *runtime.Scheme, cr client.Object) (client.Client, func() int) {
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

// mayMint lets a team key be minted (a live Team MR holds the team).
func mayMint(context.Context) error { return nil }
