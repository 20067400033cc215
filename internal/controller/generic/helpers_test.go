package generic

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
)

// testConnector is a Connector wired the way Setup wires one, over kube (a
// fake client that is also the "API reader"), for kind M listed by list. The
// Deps of the last Connect land in *got.
type testConnector[M resource.ModernManaged] struct {
	*Connector[M]
	got     *Deps
	servers *credentials.Servers
}

type connectorOption[M resource.ModernManaged] func(*Connector[M])

// withTeamOf makes M a kind that belongs to a team (ownership gate).
func withTeamOf[M resource.ModernManaged](teamOf func(M) (int64, bool)) connectorOption[M] {
	return func(c *Connector[M]) {
		c.Gates = []Gate[M]{ConsentGate[M](c.Kube, "crossplane-system", nil), OwnershipGate(c.Owners, teamOf, nil)}
	}
}

func newTestConnector[M resource.ModernManaged](kube client.Client, list func() resource.ManagedList, kind string, creds credentials.Credentials[M], opts ...connectorOption[M]) testConnector[M] {
	tc := testConnector[M]{got: &Deps{}}
	tc.servers = &credentials.Servers{Kube: kube, Clients: terdut.NewCache(), TeamKeys: &credentials.TeamKeys{Kube: kube, Namespace: "crossplane-system"}}
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
	b := fake.NewClientBuilder().WithScheme(controllertest.Scheme(t))
	for _, o := range []client.Object{&v1alpha1.Team{}, &v1alpha1.DeadmanSwitch{}} {
		b = b.WithIndex(o, IndexExternalName, ExternalNameOf).WithIndex(o, IndexProviderConfig, ProviderConfigOf)
	}
	return b
}

// mayMint lets a team key be minted (a live Team MR holds the team).
func mayMint(context.Context) error { return nil }
