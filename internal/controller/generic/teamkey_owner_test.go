package generic

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// twoTeams: a server with teams Alpha and Beta, a ClusterProviderConfig
// admitting all, and a DeadmanSwitch connector wired as Setup wires it.
func twoTeams(t *testing.T, objs func(a, b int64) []client.Object) (*terdutdouble.Server, int64, int64, testConnector[*v1alpha1.DeadmanSwitch]) {
	t.Helper()
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	t.Cleanup(hs.Close)
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	a, _ := instance.CreateTeam(t.Context(), "Alpha")
	b, _ := instance.CreateTeam(t.Context(), "Beta")
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})}
	cpc.Spec.Endpoint = hs.URL
	kube := fakeBuilder(t).WithObjects(append(objs(a.ID, b.ID), cpc, controllertest.KeySecret("crossplane-system", "creds", "tdk_instance"))...).Build()
	teamOf := func(cr *v1alpha1.DeadmanSwitch) (int64, bool) {
		return extclient.KnownTeam(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	}
	observed := func(cr *v1alpha1.DeadmanSwitch) int64 { return cr.Status.AtProvider.ID }
	c := newTestConnector(kube, func() resource.ManagedList { return &v1alpha1.DeadmanSwitchList{} }, "DeadmanSwitch", credentials.TeamKey(teamOf), func(c *Connector[*v1alpha1.DeadmanSwitch]) {
		c.Owners.Observed = func(mg resource.Managed) int64 { return observed(mg.(*v1alpha1.DeadmanSwitch)) }
		c.Gates = []Gate[*v1alpha1.DeadmanSwitch]{ConsentGate(c.Kube, "crossplane-system", observed), OwnershipGate(c.Owners, teamOf, func(cr *v1alpha1.DeadmanSwitch) int64 { return cr.Status.AtProvider.TeamID })}
	})
	return double, a.ID, b.ID, c
}

func dms(ns, name string, team int64) *v1alpha1.DeadmanSwitch {
	cr := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name)}}
	cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
	cr.Spec.ForProvider.TeamID = &team
	return cr
}

// TestADeletingChildNeverGetsAnotherTeamsKey: team-b's switch observed its
// own switch 77 of team B. With teamIdRef set the CRD lets spec.teamId
// change, and a deleted MR resolves no references: the tenant sets it to
// team A. The ownership gate lets it through (it "holds" 77), and TeamKey
// picks the key by spec.teamId: team A's kept key.
func TestADeletingChildNeverGetsAnotherTeamsKey(t *testing.T) {
	_, a, b, c := twoTeams(t, func(a, b int64) []client.Object {
		return []client.Object{mgTeam("team-a", "alpha", "ta", extclient.FormatID(a), "default", time.Hour), mgTeam("team-b", "beta", "tb", extclient.FormatID(b), "default", time.Hour)}
	})
	if _, err := c.Connect(t.Context(), dms("team-a", "legit", a)); err != nil { // team A's key is minted
		t.Fatal(err)
	}
	*c.got = Deps{}
	evil := dms("team-b", "evil", a)
	evil.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: "beta"}
	meta.SetExternalName(evil, "77")
	evil.Status.AtProvider.ID, evil.Status.AtProvider.TeamID = 77, b
	now := metav1.Now()
	evil.DeletionTimestamp = &now
	_, _ = c.Connect(t.Context(), evil)
	if c.got.Client != nil {
		if _, err := c.got.Client.ListDeadmanSwitches(t.Context(), a); err == nil {
			t.Errorf("team-b's deleting switch (observed team %d, spec.teamId edited to %d) got team A's scoped key", b, a)
		}
	}
}

// TestATeamWhoseConfigIsUnreadableHoldsNothing: sameServer takes a Team
// whose provider config cannot be read as on the same server, and OwnTeam
// (which grants keys) inherits that. Team "fake" of team-b observed team
// A's ID through its own ProviderConfig (its own endpoint answers anything),
// before alpha's Team existed, then points providerConfigRef at a config
// that does not exist: it now "holds" team A on the platform's server.
func TestATeamWhoseConfigIsUnreadableHoldsNothing(t *testing.T) {
	double, a, _, c := twoTeams(t, func(a, _ int64) []client.Object {
		fake := mgTeam("team-b", "fake", "tf", extclient.FormatID(a), "default", time.Hour)
		fake.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ProviderConfigKind, Name: "ghost"}
		return []client.Object{mgTeam("team-a", "alpha", "ta", extclient.FormatID(a), "default", time.Minute), fake}
	})
	_, err := c.Connect(t.Context(), dms("team-b", "grab", a))
	if err == nil || double.Count("POST /api/service-accounts/{id}/keys") != 0 {
		t.Errorf("team-b's switch naming team A connected (err %v), %d team keys minted; want TeamNotInNamespace, none", err, double.Count("POST /api/service-accounts/{id}/keys"))
	}
	if c.got.Client != nil {
		if _, err := c.got.Client.ListDeadmanSwitches(t.Context(), a); err == nil {
			t.Error("team-b's switch reads team A with its client")
		}
	}
}

// TestARevokeWaitsForAMintUnderWay: mayMint approves a mint (the Team is
// live); the Team is then deleted and Revoke runs while the mint is under
// way. Revoke takes no lock: it finds nothing, returns (the Team's finalizer
// goes), and the mint writes a valid key nobody will revoke.
func TestARevokeWaitsForAMintUnderWay(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	k := &credentials.TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system"}
	cfg := credentials.Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	revoked := make(chan error, 1)
	may := func(ctx context.Context) error {
		go func() { revoked <- k.Revoke(ctx, cfg, instance, team.ID) }()
		select {
		case err := <-revoked:
			revoked <- err
		case <-time.After(300 * time.Millisecond): // Revoke waits for the mint
		}
		return nil
	}
	_, _ = k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID, may)
	if err := <-revoked; err != nil {
		t.Fatal(err)
	}
	held, _ := k.Held(t.Context(), cfg, team.ID)
	if n := controllertest.ValidKeys(double); n != 0 || held {
		t.Errorf("after the Team's Revoke returned: %d valid team keys, Secret kept %t; want none", n, held)
	}
}
