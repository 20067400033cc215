package generic

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// mgTeam is a Team MR; with an external name, it has observed that team
// (its status says so), as an admitted Team that made or imported it has.
func mgTeam(ns, name, uid, externalName, pc string, age time.Duration) *v1alpha1.Team {
	cr := controllertest.TeamUsing("ClusterProviderConfig", pc)
	cr.Namespace, cr.Name, cr.UID = ns, name, types.UID(uid)
	cr.CreationTimestamp = metav1.NewTime(t0.Add(-age))
	if externalName != "" {
		meta.SetExternalName(cr, externalName)
		cr.Status.AtProvider.ID, _ = strconv.ParseInt(externalName, 10, 64)
	}
	return cr
}

// claiming is a Team MR with a hand-set external name it never observed
// (refused, or not admitted).
func claiming(ns, name, uid, externalName, pc string, age time.Duration) *v1alpha1.Team {
	cr := mgTeam(ns, name, uid, externalName, pc, age)
	cr.Status.AtProvider.ID = 0
	return cr
}

// configs are three ClusterProviderConfigs: default and second on one
// server (one written with a trailing slash and upper case), other on
// another.
func configs() []client.Object {
	c := func(name, endpoint string) client.Object {
		cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: controllertest.CPCSpec("crossplane-system", "creds")}
		cpc.Spec.Endpoint = endpoint
		return cpc
	}
	return []client.Object{c("default", "http://terdut.oncall.svc:8080"), c("second", "http://Terdut.Oncall.svc:8080/"), c("other", "http://terdut.other.svc:8080")}
}

func owners(t *testing.T, objs ...client.Object) Owners {
	t.Helper()
	kube := fakeBuilder(t).WithObjects(append(objs, configs()...)...).Build()
	return Owners{Kube: kube, NewList: func() resource.ManagedList { return &v1alpha1.TeamList{} }, Kind: "Team"}
}

func TestCheckExternalName(t *testing.T) {
	first := mgTeam("team-a", "platform", "a", "5", "default", time.Hour)
	cases := map[string]struct {
		reason string
		mg     *v1alpha1.Team
		owned  bool
	}{
		"FirstManagerKeepsIt": {reason: "The MR that managed the object first keeps it.", mg: first, owned: true},
		"HandSetNameRefused": {
			reason: "A later MR with a hand-set external name of a managed object is refused.",
			mg:     mgTeam("team-b", "grab", "b", "5", "default", time.Minute),
		},
		"OtherServerIsFine": {
			reason: "The same ID through another provider config is another server's object.",
			mg:     mgTeam("team-b", "grab", "b", "5", "other", time.Minute),
			owned:  true,
		},
		"SameServerOtherConfig": {
			reason: "The same ID through another provider config of the same server is the same object.",
			mg:     mgTeam("team-b", "grab", "b", "5", "second", time.Minute),
		},
		"NoExternalName": {reason: "Nothing to check before Create.", mg: mgTeam("team-b", "new", "c", "", "default", 0), owned: true},
		"OlderClaimLoses": {
			reason: "An older MR that claimed the ID by hand (say, before the object existed) but never observed it loses to the MR that observed it.",
			mg:     claiming("team-b", "preclaim", "d", "5", "default", 2*time.Hour),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{first}
			if tc.mg != first {
				objs = append(objs, tc.mg)
			}
			o := owners(t, objs...)
			o.Observed = func(mg resource.Managed) int64 { return mg.(*v1alpha1.Team).Status.AtProvider.ID }
			err := o.CheckExternalName(t.Context(), tc.mg)
			if (err == nil) != tc.owned || (err != nil && !extclient.IsNotOwned(err)) {
				t.Fatalf("\n%s\nCheckExternalName: %v, want owned %v", tc.reason, err, tc.owned)
			}
			if !tc.owned && tc.mg.GetCondition(xpv2.TypeReady).Reason != extclient.ReasonResourceNotOwned {
				t.Errorf("\n%s\nReady reason %q, want %s", tc.reason, tc.mg.GetCondition(xpv2.TypeReady).Reason, extclient.ReasonResourceNotOwned)
			}
		})
	}
}

func TestAdoptable(t *testing.T) {
	managedTeam := mgTeam("team-a", "platform", "a", "5", "default", time.Hour)
	newcomer := mgTeam("team-b", "platform", "b", "", "default", 0)
	o := owners(t, managedTeam, newcomer)
	if err := o.Adoptable(newcomer)(t.Context(), 5); !extclient.IsNotOwned(err) {
		t.Errorf("adopting team 5, managed by team-a/platform: %v, want ResourceNotOwned", err)
	}
	viaSecond := mgTeam("team-b", "platform", "b", "", "second", 0)
	if err := o.Adoptable(viaSecond)(t.Context(), 5); !extclient.IsNotOwned(err) {
		t.Errorf("adopting team 5 through another config of the same server: %v, want ResourceNotOwned", err)
	}
	if err := o.Adoptable(newcomer)(t.Context(), 6); err != nil {
		t.Errorf("adopting an unmanaged team: %v, want allowed", err)
	}
	if err := extclient.Adoptable(nil).Allowed(t.Context(), 5); err != nil {
		t.Errorf("a nil check: %v, want allowed", err)
	}
}

func TestCheckTeam(t *testing.T) {
	mine := mgTeam("team-a", "platform", "a", "5", "default", time.Hour)
	theirs := mgTeam("team-b", "other", "b", "9", "default", time.Hour)
	elsewhere := mgTeam("team-a", "elsewhere", "c", "12", "other", time.Hour)
	// An older Team of team-a claiming team-b's team 9 by a hand-set
	// external name: refused itself, it must not open team 9 to team-a.
	hijack := claiming("team-a", "hijack", "d", "9", "default", 2*time.Hour)
	child := func(teamID int64, pc string) *v1alpha1.DeadmanSwitch {
		sw := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sw", UID: "s"}}
		sw.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: pc}
		sw.Spec.ForProvider.TeamID = &teamID
		return sw
	}
	sameServer := mgTeam("team-b", "same-server", "e", "13", "second", time.Hour)
	o := owners(t, mine, theirs, elsewhere, hijack, sameServer)
	cases := map[string]struct {
		reason string
		teamID int64
		pc     string
		ok     bool
	}{
		"OwnTeam":          {reason: "A team managed in the child's namespace is fine.", teamID: 5, ok: true},
		"OwnTeamOtherPC":   {reason: "A team managed in the child's namespace through another config of the same server is fine.", teamID: 5, pc: "second", ok: true},
		"AnotherNamespace": {reason: "A raw teamId of another namespace's team is refused, though a Team of the child's namespace claims it by a hand-set external name.", teamID: 9},
		"OtherConfig":      {reason: "A team managed through another provider config is refused.", teamID: 12},
		"SameServer":       {reason: "A team managed in another namespace through another config of the same server is refused.", teamID: 13},
		"Unmanaged":        {reason: "A team no Team MR manages is refused.", teamID: 77},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.pc == "" {
				tc.pc = "default"
			}
			sw := child(tc.teamID, tc.pc)
			err := o.CheckTeam(t.Context(), sw, tc.teamID)
			if (err == nil) != tc.ok {
				t.Fatalf("\n%s\nCheckTeam(%d): %v, want ok %v", tc.reason, tc.teamID, err, tc.ok)
			}
			if !tc.ok && sw.GetCondition(xpv2.TypeReady).Reason != ReasonTeamNotInNamespace {
				t.Errorf("\n%s\nReady reason %q", tc.reason, sw.GetCondition(xpv2.TypeReady).Reason)
			}
		})
	}
}

func TestConnectLetsANotOwnedMRGoUntouched(t *testing.T) {
	first := mgTeam("team-a", "platform", "a", "5", "default", time.Hour)
	grab := mgTeam("team-a", "grab", "b", "5", "default", time.Minute)
	now := metav1.Now()
	grab.SetDeletionTimestamp(&now)
	grab.SetFinalizers([]string{"f"})
	kube := fakeBuilder(t).WithObjects(
		first, grab,
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})},
		controllertest.KeySecret("crossplane-system", "creds", "tdk_instance"),
	).Build()
	c := newTestConnector(kube, teams, "Team", credentials.InstanceKey[*v1alpha1.Team]())
	ext, err := c.Connect(t.Context(), grab)
	if called := c.got.Client != nil; err != nil || called {
		t.Fatalf("Connect of a not-owned MR being deleted = %v (real client built: %v); want the untouched client", err, called)
	}
	if o, err := ext.Observe(t.Context(), grab); err != nil || o.ResourceExists {
		t.Errorf("untouched Observe = %+v, %v; want nothing to delete", o, err)
	}
}
