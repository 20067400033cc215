package generic

import (
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func TestConnectGivesChildrenTeamKeysOnly(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	tm, _ := instance.CreateTeam(t.Context(), "Platform")

	team := mgTeam("team-a", "platform", "t", extclient.FormatID(tm.ID), "default", time.Hour)
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})}
	cpc.Spec.Endpoint = hs.URL
	kube := fakeBuilder(t).WithObjects(team, cpc, controllertest.KeySecret("crossplane-system", "creds", "tdk_instance")).Build()

	connect := func(useTeamKey bool, mg *v1alpha1.Team) (Deps, error) {
		teamOf := func(*v1alpha1.Team) (int64, bool) { return tm.ID, true }
		creds := credentials.InstanceKey[*v1alpha1.Team]()
		if useTeamKey {
			creds = credentials.TeamKey(teamOf)
		}
		c := newTestConnector(kube, teams, "Team", creds, withTeamOf(teamOf))
		_, err := c.Connect(t.Context(), mg)
		return *c.got, err
	}
	child := mgTeam("team-a", "child", "c", "", "default", 0)
	d, err := connect(true, child)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.GetTeamByName(t.Context(), "Platform"); !terdut.IsForbidden(err) {
		t.Errorf("a child's client listed teams (%v): it holds more than its team's key", err)
	}
	d, err = connect(false, child)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Client.GetTeamByName(t.Context(), "Platform"); err != nil {
		t.Errorf("a kind without team keys (a team-scoped ServiceAccount) lost the config's key: %v", err)
	}
	if _, err := connect(false, mgTeam("team-b", "grab", "g", "", "default", 0)); !extclient.IsNotOwned(err) {
		t.Errorf("a team-bound MR of another namespace: %v, want TeamNotInNamespace", err)
	}
}

func TestConnectLetsAChildOfADeletedTeamGo(t *testing.T) {
	type want struct {
		untouched bool
		err       bool
		mints     int
	}
	cases := map[string]struct {
		reason       string
		deleting     bool
		teamKnown    bool
		teamDeleted  bool
		getTeamFails bool
		// listOmitsTeam: lists are shared, and the list of teams
		// omits the child's team, which exists.
		listOmitsTeam bool
		want          want
	}{
		"TeamGone": {
			reason:   "a child deleted after its team (as a claim's are) finds nothing to delete and mints no key for a team that is gone",
			deleting: true, teamKnown: true, teamDeleted: true,
			want: want{untouched: true},
		},
		"TeamUnknown": {
			reason:   "a child that never learned its team's ID made nothing: it may go",
			deleting: true,
			want:     want{untouched: true},
		},
		"TeamThere": {
			reason:   "a child deleted while its team exists deletes its object with its team's key, minted for its live Team (which revokes it), never the instance key",
			deleting: true, teamKnown: true,
			want: want{mints: 1},
		},
		"TeamMissingFromTheList": {
			reason:   "a list of teams that omits the child's team is not read as the team gone: only the server's own 404 is",
			deleting: true, teamKnown: true, listOmitsTeam: true,
			want: want{mints: 1},
		},
		"ServerError": {
			reason:   "a 5xx while checking the team is not read as gone",
			deleting: true, teamKnown: true, getTeamFails: true,
			want: want{err: true},
		},
		"NotDeleting": {
			reason:    "a live child whose team is gone is not let go: it reports the error",
			teamKnown: true, teamDeleted: true,
			want: want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
			hs := httptest.NewServer(double.Handler())
			defer hs.Close()
			instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
			tm, _ := instance.CreateTeam(t.Context(), "Platform")
			if tc.teamDeleted {
				if err := instance.DeleteTeam(t.Context(), tm.ID); err != nil {
					t.Fatal(err)
				}
			}
			if tc.getTeamFails {
				double.AddFault(terdutdouble.Fault{Method: "GET", Route: "/api/teams/{id}", Status: 503})
			}
			if tc.listOmitsTeam {
				double.AddFault(terdutdouble.Fault{Method: "GET", Route: "/api/teams", Status: 200, Body: "[]"})
			}
			cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})}
			cpc.Spec.Endpoint = hs.URL
			team := mgTeam("team-a", "platform", "t", extclient.FormatID(tm.ID), "default", time.Hour)
			kube := fakeBuilder(t).WithObjects(team, cpc, controllertest.KeySecret("crossplane-system", "creds", "tdk_instance")).Build()
			teamOf := func(*v1alpha1.Team) (int64, bool) { return tm.ID, tc.teamKnown }
			c := newTestConnector(kube, teams, "Team", credentials.TeamKey(teamOf), withTeamOf(teamOf))
			if tc.listOmitsTeam {
				c.servers.ListMaxAge = time.Hour
			}
			child := mgTeam("team-a", "child", "c", "", "default", 0)
			if tc.deleting {
				now := metav1.Now()
				child.DeletionTimestamp = &now
			}
			ext, err := c.Connect(t.Context(), child)
			_, isUntouched := ext.(untouched[*v1alpha1.Team])
			if (err != nil) != tc.want.err || isUntouched != tc.want.untouched {
				t.Fatalf("%s\nConnect: err %v, untouched %t; want err %t, untouched %t", tc.reason, err, isUntouched, tc.want.err, tc.want.untouched)
			}
			if external := c.got.Client != nil; !tc.want.err && !tc.want.untouched && !external {
				t.Errorf("%s\nthe kind's external client was not made", tc.reason)
			}
			if got := double.Count("POST /api/service-accounts/{id}/keys"); got != tc.want.mints {
				t.Errorf("%s\nteam keys minted: %d, want %d", tc.reason, got, tc.want.mints)
			}
		})
	}
}

// TestRevokeTeamKeyForgetsItsClient: when a Team goes, the client that held
// its scoped key goes from the cache too (it would hold a dead key and a
// connection pool forever).
func TestRevokeTeamKeyForgetsItsClient(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	tm, _ := instance.CreateTeam(t.Context(), "Platform")
	team := mgTeam("team-a", "platform", "t", extclient.FormatID(tm.ID), "default", time.Hour)
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})}
	cpc.Spec.Endpoint = hs.URL
	kube := fakeBuilder(t).WithObjects(team, cpc, controllertest.KeySecret("crossplane-system", "creds", "tdk_instance")).Build()
	teamOf := func(*v1alpha1.Team) (int64, bool) { return tm.ID, true }
	c := newTestConnector(kube, teams, "Team", credentials.TeamKey(teamOf), withTeamOf(teamOf))
	if _, err := c.Connect(t.Context(), mgTeam("team-a", "child", "c", "", "default", 0)); err != nil {
		t.Fatal(err)
	}
	before := c.servers.Clients.Len()
	if err := c.got.Conn.RevokeTeamKey(t.Context(), tm.ID); err != nil {
		t.Fatal(err)
	}
	if after := c.servers.Clients.Len(); after != before-1 {
		t.Errorf("%d clients cached after the team's key was revoked, want %d (its client forgotten)", after, before-1)
	}
}
