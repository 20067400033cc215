package generic

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestNamespacedConfigReadsOnlySecrets: a tenant's
// ProviderConfig must not make the provider read its own files or
// environment (its Kubernetes token) and send them to the tenant's endpoint.
func TestNamespacedConfigReadsOnlySecrets(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("provider-own-kubernetes-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROVIDER_OWN_SECRET", "provider-own-env-secret")
	kube := fakeBuilder(t).Build()
	for name, creds := range map[string]v1alpha1.ProviderCredentials{
		"Filesystem":  {Source: xpv2.CredentialsSourceFilesystem, Fs: &xpv2.FsSelector{Path: file}},
		"Environment": {Source: xpv2.CredentialsSourceEnvironment, Env: &xpv2.EnvSelector{Name: "PROVIDER_OWN_SECRET"}},
	} {
		cfg := credentials.Config{Kind: v1alpha1.ProviderConfigKind, Name: "evil", Namespace: "tenant-b", Spec: v1alpha1.ProviderConfigSpec{Endpoint: "http://127.0.0.1:1", Credentials: creds}}
		o, err := credentials.ClientOptions(t.Context(), kube, cfg)
		if err == nil || o.Token != "" {
			t.Errorf("%s: a namespaced ProviderConfig read a key of length %d (err %v); want a refusal", name, len(o.Token), err)
		}
		if err != nil && strings.Contains(err.Error(), "provider-own") {
			t.Errorf("%s: the refusal carries the secret: %v", name, err)
		}
		// The platform's ClusterProviderConfig may still use them.
		cfg.Kind, cfg.Namespace = v1alpha1.ClusterProviderConfigKind, ""
		if o, err := credentials.ClientOptions(t.Context(), kube, cfg); err != nil || o.Token == "" {
			t.Errorf("%s: a ClusterProviderConfig could not read its key: %v", name, err)
		}
	}
}

// TestTeamKeysMintOnlyOnTheTeamsOwnAccount: an account of a
// team key's name made by someone else, of another team or of the whole
// server, must not be adopted: the team's children would hold its key.
func TestTeamKeysMintOnlyOnTheTeamsOwnAccount(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	other, _ := instance.CreateTeam(t.Context(), "Other")
	planted, err := instance.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: credentials.AccountName(team.ID), Scope: terdut.ScopeTeam, TeamID: &other.ID})
	if err != nil {
		t.Fatal(err)
	}
	k := &credentials.TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system"}
	cfg := credentials.Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	if _, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID, mayMint); err == nil {
		t.Error("a team key was handed out from an account of another team")
	}
	for _, a := range double.Snapshot().ServiceAccounts {
		if a.ID == planted.ID && len(a.KeyIDs) != 0 {
			t.Errorf("%d keys minted on the planted account of team %d", len(a.KeyIDs), other.ID)
		}
	}
}

// refusing is an external client whose Create is refused at adopt time.
type refusing struct {
	managed.TypedExternalClient[*v1alpha1.Team]

	owners  Owners
	creates int
}

func (r *refusing) Observe(context.Context, *v1alpha1.Team) (managed.ExternalObservation, error) {
	return managed.ExternalObservation{}, nil
}

func (r *refusing) Create(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalCreation, error) {
	r.creates++
	return managed.ExternalCreation{}, r.owners.Adoptable(cr)(ctx, 6)
}

// TestRefusalAtAdoptTimeStaysOnReady: a ResourceNotOwned
// found by Create is what Observe answers for a while after (crossplane-
// runtime would otherwise show Creating), and Create is tried again once
// the hold is over or the spec changed.
func TestRefusalAtAdoptTimeStaysOnReady(t *testing.T) {
	holder := mgTeam("team-a", "holder", "uid-holder", "6", "default", time.Hour)
	cr := mgTeam("team-b", "taker", "uid-taker", "", "default", 0)
	ext := &refusing{owners: owners(t, holder)}
	now := time.Now()
	r := adjust.NewRefusalsOn(func() time.Time { return now })
	e := adjust.Remembered[*v1alpha1.Team](r, ext)
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("Create adopted another MR's team")
	}
	cr.SetConditions(xpv2.Creating()) // what crossplane-runtime does after a failed Create
	if _, err := e.Observe(t.Context(), cr); err == nil {
		t.Error("Observe after a refused Create answered without the refusal")
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != extclient.ReasonResourceNotOwned {
		t.Errorf("Ready after the next Observe = %s, want %s", c.Reason, extclient.ReasonResourceNotOwned)
	}
	now = now.Add(adjust.RefusalHold)
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Errorf("Observe once the hold is over: %v, want the server asked again", err)
	}
	_, _ = e.Create(t.Context(), cr)
	cr.SetGeneration(2)
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Errorf("Observe after a spec change: %v, want the server asked again", err)
	}
	_, _ = e.Create(t.Context(), cr)
	cr.DeletionTimestamp = &metav1.Time{Time: now}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Errorf("Observe of a deleted MR: %v, want it let through to clean up", err)
	}
}

// childWorld is a server with team "Platform", a ClusterProviderConfig for
// it, and kube holding objs besides.
func childWorld(t *testing.T, objs ...client.Object) (*terdutdouble.Server, int64, client.Client) {
	t.Helper()
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	t.Cleanup(hs.Close)
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	tm, _ := instance.CreateTeam(t.Context(), "Platform")
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})}
	cpc.Spec.Endpoint = hs.URL
	objs = append(objs, cpc, controllertest.KeySecret("crossplane-system", "creds", "tdk_instance"))
	return double, tm.ID, fakeBuilder(t).WithObjects(objs...).Build()
}

// observedTeamOwners makes the connector's ownership gate know what a Team
// observed (its status), as Setup does.
func observedTeamOwners(teamOf func(*v1alpha1.Team) (int64, bool)) connectorOption[*v1alpha1.Team] {
	return func(c *Connector[*v1alpha1.Team]) {
		c.Owners.Observed = func(mg resource.Managed) int64 { return mg.(*v1alpha1.Team).Status.AtProvider.ID }
		c.Gates = []Gate[*v1alpha1.Team]{ConsentGate[*v1alpha1.Team](c.Kube, "crossplane-system", nil), OwnershipGate(c.Owners, teamOf, nil)}
	}
}

// TestAnObserveOnlyChildUsesItsTeamsKey: a child that only observes reads
// with its team's scoped key (owned by its Team, which revokes it when it
// goes), never with the provider config's instance key.
func TestAnObserveOnlyChildUsesItsTeamsKey(t *testing.T) {
	team := mgTeam("team-a", "platform", "t", "", "default", time.Hour)
	double, teamID, kube := childWorld(t, team)
	extclient.SetExternalID(team, teamID)
	team.Status.AtProvider.ID = teamID
	if err := kube.Update(t.Context(), team); err != nil {
		t.Fatal(err)
	}
	teamOf := func(*v1alpha1.Team) (int64, bool) { return teamID, true }
	c := newTestConnector(kube, teams, "Team", credentials.TeamKey(teamOf), withTeamOf(teamOf))
	child := mgTeam("team-a", "imported", "c", "", "default", 0)
	child.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
	if _, err := c.Connect(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	if c.got.Client == nil {
		t.Fatal("an Observe-only child got no client to observe with")
	}
	if _, err := c.got.Client.GetTeamByName(t.Context(), "Platform"); !terdut.IsForbidden(err) {
		t.Errorf("an Observe-only child's client listed every team (%v): it holds the instance key", err)
	}
	if _, err := c.got.Client.ListDeadmanSwitches(t.Context(), teamID); err != nil {
		t.Errorf("an Observe-only child cannot read its own team with its client: %v", err)
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys"); n != 1 {
		t.Errorf("%d team keys minted for the Observe-only child, want its team's one", n)
	}
}

// TestAChildWithoutALiveTeamWaits: a team's key is its Team's, so a child
// whose Team is gone (removed without Delete: the team stays on the server)
// or being deleted mints none, and never falls back to the provider config's
// instance key: it waits, with reason WaitingForTeam. One that never
// observed its object is let go untouched.
func TestAChildWithoutALiveTeamWaits(t *testing.T) {
	cases := map[string]struct {
		reason   string
		teams    func(teamID int64) []client.Object
		deleting bool
		// says is what the condition's message must say.
		says string
	}{
		"TeamGoneChildDeleted": {
			reason:   "its Team was removed without Delete (its key revoked); the child is deleted after it",
			teams:    func(int64) []client.Object { return nil },
			deleting: true,
			says:     "has no Team in namespace \"team-a\"",
		},
		"TeamBeingDeleted": {
			reason:   "its Team is being deleted: a key minted now would outlive the revoke",
			deleting: true,
			says:     "is being deleted",
			teams: func(teamID int64) []client.Object {
				tm := mgTeam("team-a", "platform", "t", extclient.FormatID(teamID), "default", time.Hour)
				tm.Status.AtProvider.ID = teamID
				tm.Finalizers = []string{"finalizer.managedresource.crossplane.io"}
				return []client.Object{tm}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			double, teamID, kube := childWorld(t)
			for _, o := range tc.teams(teamID) {
				// Made, then deleted: it stays, being deleted, while
				// its finalizer does.
				if err := kube.Create(t.Context(), o); err != nil {
					t.Fatal(err)
				}
				if err := kube.Delete(t.Context(), o); err != nil {
					t.Fatal(err)
				}
			}
			teamOf := func(*v1alpha1.Team) (int64, bool) { return teamID, true }
			c := newTestConnector(kube, teams, "Team", credentials.TeamKey(teamOf), observedTeamOwners(teamOf))
			child := mgTeam("team-a", "child", "c", "", "default", 0)
			extclient.SetExternalID(child, 42)
			child.Status.AtProvider.ID = 42
			child.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionDelete})
			if tc.deleting {
				now := metav1.Now()
				child.DeletionTimestamp = &now
			}
			ext, err := c.Connect(t.Context(), child)
			if err == nil {
				t.Errorf("%s\nConnect: no error (external client %T); want the child to wait", tc.reason, ext)
			}
			if c.got != nil && c.got.Client != nil {
				t.Errorf("%s\nthe child got a client", tc.reason)
			}
			if c := child.GetCondition(xpv2.TypeReady); c.Reason != credentials.ReasonWaitingForTeam || !strings.Contains(c.Message, tc.says) {
				t.Errorf("%s\nReady %q %q, want %q saying %q", tc.reason, c.Reason, c.Message, credentials.ReasonWaitingForTeam, tc.says)
			}
			if n := double.Count("POST /api/service-accounts/{id}/keys"); n != 0 {
				t.Errorf("%s\n%d team keys minted with no live Team to revoke them", tc.reason, n)
			}
		})
	}

	// One that never observed its object (a hand-set external name) is
	// refused and let go untouched.
	_, teamID, kube := childWorld(t)
	teamOf := func(*v1alpha1.Team) (int64, bool) { return teamID, true }
	c := newTestConnector(kube, teams, "Team", credentials.TeamKey(teamOf), observedTeamOwners(teamOf))
	grab := mgTeam("team-a", "grab", "g", "", "default", 0)
	extclient.SetExternalID(grab, 43)
	now := metav1.Now()
	grab.DeletionTimestamp = &now
	if ext, err := c.Connect(t.Context(), grab); err != nil {
		t.Fatal(err)
	} else if _, isUntouched := ext.(untouched[*v1alpha1.Team]); !isUntouched {
		t.Error("a child that never observed its object deletes on the server")
	}
}

// TestRevokeOfTheReplacedTeamKeyIsRetried: when revoking
// the key a re-mint replaced fails once, that key's ID must not be
// forgotten: the next use of the team's key revokes it.
func TestRevokeOfTheReplacedTeamKeyIsRetried(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance", MaxRetries: -1})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	k := &credentials.TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system"}
	cfg := credentials.Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	o, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	first := o.Token
	double.AddFault(terdutdouble.Fault{Method: "GET", Route: "/api/teams/{id}/integrations", Status: 401, Times: 1})
	double.AddFault(terdutdouble.Fault{Method: "DELETE", Route: "/api/service-accounts/{id}/keys/{kid}", Status: 503, Times: 1})
	tc, _ := terdut.New(o)
	_, _ = tc.ListIntegrations(t.Context(), team.ID)
	if !double.Verify(first.Reveal()).Valid {
		t.Fatal("the replaced key was revoked at once: the injected 503 did not apply")
	}
	if _, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID, mayMint); err != nil {
		t.Fatalf("the next use of the team key: %v", err)
	}
	if double.Verify(first.Reveal()).Valid {
		t.Error("the replaced key is still valid after the next use of the team key: its revocation was forgotten")
	}
}

// upToDate is an external client whose Observe answers o.
type upToDate struct {
	managed.TypedExternalClient[*v1alpha1.Team]

	o managed.ExternalObservation
}

func (u upToDate) Observe(context.Context, *v1alpha1.Team) (managed.ExternalObservation, error) {
	return u.o, nil
}

func (u upToDate) Update(context.Context, *v1alpha1.Team) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, nil
}

// TestObservedGenerationFollowsSuccess status.observedGeneration
// is in every MR's CRD; it must say which generation was last reconciled
// successfully, and not move for one that is not (yet) applied.
func TestObservedGenerationFollowsSuccess(t *testing.T) {
	cr := mgTeam("team-a", "web", "w", "5", "default", 0)
	cr.SetGeneration(3)
	e := adjust.KeepingGenerations[*v1alpha1.Team](upToDate{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}})
	_, _ = e.Observe(t.Context(), cr)
	if g := cr.GetObservedGeneration(); g != 0 {
		t.Errorf("observedGeneration %d after an Observe that found a diff, want 0", g)
	}
	_, _ = e.Update(t.Context(), cr)
	if g := cr.GetObservedGeneration(); g != 3 {
		t.Errorf("observedGeneration %d after a successful Update of generation 3, want 3", g)
	}
	cr.SetGeneration(4)
	e = adjust.KeepingGenerations[*v1alpha1.Team](upToDate{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}})
	_, _ = e.Observe(t.Context(), cr)
	if g := cr.GetObservedGeneration(); g != 4 {
		t.Errorf("observedGeneration %d after generation 4 was found up to date, want 4", g)
	}
}
