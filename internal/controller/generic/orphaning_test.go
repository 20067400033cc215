package generic

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
)

// TestAnOrphanedTeamWithoutCredentialsIsLetGo: a namespace is deleted. Its
// credentials Secret goes at once; its Team (managementPolicies [Observe])
// keeps its finalizer. Revoking the team's key needs the config's key: with
// none left, the Team is let go (with a Warning), not held for ever, and its
// namespace with it.
func TestAnOrphanedTeamWithoutCredentialsIsLetGo(t *testing.T) {
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pc"}, Spec: controllertest.PCSpec("team-a", "creds")} // no Secret "creds"
	cr := controllertest.TeamUsing(v1alpha1.ProviderConfigKind, "pc")
	meta.SetExternalName(cr, "5")
	cr.Status.AtProvider.ID = 5
	cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
	cr.Finalizers = []string{managed.FinalizerName}
	kube := fakeBuilder(t).WithObjects(pc, cr).Build()
	if err := kube.Delete(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	owners := Owners{
		Kube: kube, NewList: func() resource.ManagedList { return &v1alpha1.TeamList{} }, Kind: "Team",
		Observed: func(mg resource.Managed) int64 { return mg.(*v1alpha1.Team).Status.AtProvider.ID },
	}
	servers := &credentials.Servers{Kube: kube, Clients: terdut.NewCache(), TeamKeys: &credentials.TeamKeys{Kube: kube, Namespace: "crossplane-system"}}
	k := Kind[*v1alpha1.Team]{Orphaned: func(ctx context.Context, cr *v1alpha1.Team, c *credentials.Conn) error {
		return c.RevokeTeamKey(ctx, cr.Status.AtProvider.ID)
	}}
	inner := 0
	o := Orphaning[*v1alpha1.Team]{
		Inner: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			inner++
			return reconcile.Result{}, nil
		}),
		Kube: kube, New: func() *v1alpha1.Team { return &v1alpha1.Team{} }, Before: orphaned(kube, servers, owners, event.NewNopRecorder(), k),
	}
	var err error
	for range 3 {
		_, err = o.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cr)})
	}
	if inner == 0 {
		t.Errorf("the orphaned Team never reaches crossplane-runtime (its finalizer stays for good): %v", err)
	}
}
