package escalationpolicy

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

type option func(*v1alpha1.EscalationPolicy)

// policy is a two-level policy paging the on-call, then alice.
func policy(teamID int64, o ...option) *v1alpha1.EscalationPolicy {
	cr := &v1alpha1.EscalationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: "team-a"},
		Spec: v1alpha1.EscalationPolicySpec{ForProvider: v1alpha1.EscalationPolicyParameters{
			TeamID:        &teamID,
			RepeatCount:   2,
			FallbackTopic: "platform-oncall",
			Levels: []v1alpha1.EscalationLevel{
				{Timeout: "5m", Targets: []v1alpha1.EscalationTarget{{Kind: "oncall"}}},
				{Timeout: "15m", Targets: []v1alpha1.EscalationTarget{{Kind: "oncall"}, {Kind: "user", Username: "alice"}}},
			},
		}},
	}
	for _, fn := range o {
		fn(cr)
	}
	return cr
}

func withID(id int64) option {
	return func(cr *v1alpha1.EscalationPolicy) { extclient.SetExternalID(cr, id) }
}

func withTarget(level int, username string) option {
	return func(cr *v1alpha1.EscalationPolicy) {
		l := &cr.Spec.ForProvider.Levels[level]
		l.Targets = append(l.Targets, v1alpha1.EscalationTarget{Kind: "user", Username: username})
	}
}

func withDeletion() option {
	return func(cr *v1alpha1.EscalationPolicy) {
		now := metav1.Now()
		cr.SetDeletionTimestamp(&now)
	}
}

// fixture is the double with a team; alice is user 3.
func fixture(t *testing.T) (*controllertest.Fixture, int64, int64) {
	t.Helper()
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	var alice int64
	users, _ := f.Client.ListUsers(t.Context())
	for _, u := range users {
		if u.Username == "alice" {
			alice = u.ID
		}
	}
	return f, teamID, alice
}

func serverPolicy(alice int64) terdut.EscalationPolicy {
	return terdut.EscalationPolicy{RepeatCount: 2, FallbackTopic: "platform-oncall", Levels: []terdut.EscalationLevel{
		{Timeout: "5m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}}},
		{Timeout: "15m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}, {Kind: "user", UserID: &alice}}},
	}}
}

// secondPolicy is a team whose policy an EscalationPolicy "first" holds, and
// a second EscalationPolicy for the same team, observed, not yet created.
type secondPolicy struct {
	f      *controllertest.Fixture
	teamID int64
	kube   client.Client
	owners generic.Owners
	first  *v1alpha1.EscalationPolicy
	second *v1alpha1.EscalationPolicy
	e      *external
}

func aSecondPolicy(t *testing.T) secondPolicy {
	t.Helper()
	f, teamID, alice := fixture(t)
	if err := f.Client.PutEscalationPolicy(t.Context(), teamID, serverPolicy(alice)); err != nil {
		t.Fatal(err)
	}
	pc := &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
	first := policy(teamID, withID(teamID))
	first.Name, first.UID = "first", "uid-first"
	first.Status.AtProvider.TeamID = teamID
	first.SetProviderConfigReference(pc)
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(first).
		WithIndex(&v1alpha1.EscalationPolicy{}, generic.IndexExternalName, generic.ExternalNameOf).Build()
	owners := generic.Owners{
		Kube: kube, Kind: "EscalationPolicy",
		NewList:  func() resource.ManagedList { return &v1alpha1.EscalationPolicyList{} },
		Observed: func(mg resource.Managed) int64 { return mg.(*v1alpha1.EscalationPolicy).Status.AtProvider.TeamID },
	}
	second := policy(teamID)
	second.Name, second.UID = "second", "uid-second"
	second.SetProviderConfigReference(pc)
	e := &external{api: f.Client, adoptable: owners.Adoptable(second)}
	if _, err := e.Observe(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	return secondPolicy{f: f, teamID: teamID, kube: kube, owners: owners, first: first, second: second, e: e}
}

func TestObserve(t *testing.T) {
	type want struct {
		o          managed.ExternalObservation
		diff       bool
		err        error
		ready      *xpv2.Condition
		resolved   int
		requests   int
		atProvider bool
	}
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, f *controllertest.Fixture, teamID, alice int64) *v1alpha1.EscalationPolicy
		want   want
	}{
		"NoExternalName": {
			reason: "Before Create the policy does not exist; usernames are resolved already (one users list).",
			setup: func(_ *testing.T, _ *controllertest.Fixture, teamID, _ int64) *v1alpha1.EscalationPolicy {
				return policy(teamID)
			},
			want: want{resolved: 1, requests: 1},
		},
		"UnknownUser": {
			reason: "An unknown username makes the MR not ready with a message naming it, and writes nothing.",
			setup: func(_ *testing.T, _ *controllertest.Fixture, teamID, _ int64) *v1alpha1.EscalationPolicy {
				return policy(teamID, withTarget(0, "carol"), withTarget(1, "dave"), withTarget(1, "carol"))
			},
			want: want{
				err:      errors.Errorf(errUnknownUsers, "carol, dave"),
				ready:    new(extclient.Unavailable(ReasonUnknownUser, "terdut-server has no user named carol, dave: fix the username, or have the user sign in once so the server knows them")),
				resolved: 1, requests: 1,
			},
		},
		"UpToDate": {
			reason: "The server's policy equals the spec: up to date, for one users list and one GET.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID, alice int64) *v1alpha1.EscalationPolicy {
				t.Helper()
				p := serverPolicy(alice)
				p.Levels[1].Timeout = "15m0s" // the same duration, spelled as the server may
				_ = f.Client.PutEscalationPolicy(t.Context(), teamID, p)
				return policy(teamID, withID(teamID))
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, ready: new(xpv2.Available()), resolved: 1, requests: 2, atProvider: true},
		},
		"Drift": {
			reason: "A policy changed on the server is drift.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID, alice int64) *v1alpha1.EscalationPolicy {
				t.Helper()
				p := serverPolicy(alice)
				p.RepeatCount = 9
				_ = f.Client.PutEscalationPolicy(t.Context(), teamID, p)
				return policy(teamID, withID(teamID))
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true}, diff: true, ready: new(xpv2.Available()), resolved: 1, requests: 2, atProvider: true},
		},
		"EmptyPolicyDoesNotExist": {
			reason: "An empty (cleared) policy does not exist: Create PUTs it again.",
			setup: func(_ *testing.T, _ *controllertest.Fixture, teamID, _ int64) *v1alpha1.EscalationPolicy {
				return policy(teamID, withID(teamID))
			},
			want: want{resolved: 1, requests: 2},
		},
		"TeamGone": {
			reason: "A 404 (the team is gone) means the policy is gone.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID, _ int64) *v1alpha1.EscalationPolicy {
				t.Helper()
				_ = f.Client.DeleteTeam(t.Context(), teamID)
				return policy(teamID, withID(teamID))
			},
			want: want{resolved: 1, requests: 2},
		},
		"ServerErrorIsNotGone": {
			reason: "A 5xx on GET is an error, not a missing policy.",
			setup: func(_ *testing.T, f *controllertest.Fixture, teamID, _ int64) *v1alpha1.EscalationPolicy {
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/escalation", Status: http.StatusInternalServerError})
				return policy(teamID, withID(teamID))
			},
			want: want{err: errors.Wrap(&terdut.APIError{Method: "GET", Path: "/api/teams/" + extclient.FormatID(controllertest.FirstID) + "/escalation", StatusCode: 500, Message: "injected fault"}, errGetPolicy), resolved: 1, requests: 2},
		},
		"DeletingSkipsUsers": {
			reason: "A policy being deleted is only looked up: an unknown user must not block deletion.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID, alice int64) *v1alpha1.EscalationPolicy {
				t.Helper()
				_ = f.Client.PutEscalationPolicy(t.Context(), teamID, serverPolicy(alice))
				return policy(teamID, withID(teamID), withTarget(0, "carol"), withDeletion())
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, requests: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, teamID, alice := fixture(t)
			cr := tc.setup(t, f, teamID, alice)
			f.Server.ResetCounters()
			e := &external{api: f.Client}

			got, err := e.Observe(t.Context(), cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if (got.Diff != "") != tc.want.diff {
				t.Errorf("\n%s\nObserve(...): Diff = %q, want a diff: %v", tc.reason, got.Diff, tc.want.diff)
			}
			if tc.want.ready != nil {
				if diff := cmp.Diff(*tc.want.ready, cr.GetCondition(xpv2.TypeReady), test.EquateConditions()); diff != "" {
					t.Errorf("\n%s\nObserve(...): Ready -want, +got:\n%s", tc.reason, diff)
				}
			}
			if n := len(cr.Status.AtProvider.ResolvedUsers); n != tc.want.resolved {
				t.Errorf("\n%s\nObserve(...): %d resolved users in status, want %d", tc.reason, n, tc.want.resolved)
			}
			if tc.want.atProvider && (cr.Status.AtProvider.TeamID != teamID || cr.Status.AtProvider.TargetCount != 3) {
				t.Errorf("\n%s\nObserve(...): atProvider = %+v, want team %d with 3 targets", tc.reason, cr.Status.AtProvider, teamID)
			}
			if n := f.Server.Total(); n != tc.want.requests {
				t.Errorf("\n%s\nObserve(...): %d requests, want %d", tc.reason, n, tc.want.requests)
			}
		})
	}
}

func TestCreateWritesResolvedPolicy(t *testing.T) {
	f, teamID, alice := fixture(t)
	cr := policy(teamID)
	e := &external{api: f.Client}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := meta.GetExternalName(cr); got != extclient.FormatID(teamID) {
		t.Errorf("external-name = %q, want the team ID %d", got, teamID)
	}
	got, _ := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if diff := cmp.Diff(serverPolicy(alice), *got); diff != "" {
		t.Errorf("server policy after Create: -want, +got:\n%s", diff)
	}
}

func TestCreateAdoptsExistingPolicy(t *testing.T) {
	// The escalation API has no 409: a team has exactly one policy. A policy
	// already there (written by hand, or by an attempt interrupted before the
	// external name was recorded) is taken over by the whole-policy PUT.
	f, teamID, alice := fixture(t)
	_ = f.Client.PutEscalationPolicy(t.Context(), teamID, terdut.EscalationPolicy{RepeatCount: 7, Levels: []terdut.EscalationLevel{{Timeout: "1m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}}}}})
	cr := policy(teamID)
	e := &external{api: f.Client}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatalf("Create over an existing policy: %v", err)
	}
	got, _ := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if diff := cmp.Diff(serverPolicy(alice), *got); diff != "" {
		t.Errorf("server policy: -want, +got:\n%s", diff)
	}
}

func TestUserRenameIsPickedUp(t *testing.T) {
	f, teamID, alice := fixture(t)
	_ = f.Client.PutEscalationPolicy(t.Context(), teamID, serverPolicy(alice))
	// The user alice is renamed and a new user takes the name alice.
	f.Server.RenameUser(alice, "alice-old")
	newAlice := f.Server.AddUser("alice")

	cr := policy(teamID, withID(teamID))
	e := &external{api: f.Client}
	o, err := e.Observe(t.Context(), cr)
	if err != nil || o.ResourceUpToDate {
		t.Fatalf("Observe after a rename = %+v, %v; want drift (alice is a different user now)", o, err)
	}
	if _, err := e.Update(t.Context(), cr); err != nil {
		t.Fatalf("Update: %v", err)
	}
	got, _ := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if uid := got.Levels[1].Targets[1].UserID; uid == nil || *uid != newAlice.ID {
		t.Errorf("target user after Update = %v, want the user now named alice (%d)", uid, newAlice.ID)
	}
}

func TestNoPutWhenEqual(t *testing.T) {
	f, teamID, alice := fixture(t)
	_ = f.Client.PutEscalationPolicy(t.Context(), teamID, serverPolicy(alice))
	f.Server.ResetCounters()
	e := &external{api: f.Client}
	o, err := e.Observe(t.Context(), policy(teamID, withID(teamID)))
	if err != nil || !o.ResourceUpToDate {
		t.Fatalf("Observe = %+v, %v; want up to date", o, err)
	}
	if n := f.Server.Count("PUT /api/teams/{id}/escalation"); n != 0 {
		t.Errorf("%d PUTs for an unchanged policy, want 0", n)
	}
}

func TestDriftIsReverted(t *testing.T) {
	f, teamID, alice := fixture(t)
	p := serverPolicy(alice)
	p.Levels = p.Levels[:1]
	_ = f.Client.PutEscalationPolicy(t.Context(), teamID, p)
	cr := policy(teamID, withID(teamID))
	e := &external{api: f.Client}
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceUpToDate {
		t.Fatalf("Observe = %+v, %v; want drift", o, err)
	}
	if _, err := e.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	got, _ := f.Client.GetEscalationPolicy(t.Context(), teamID)
	if diff := cmp.Diff(serverPolicy(alice), *got); diff != "" {
		t.Errorf("server policy after Update: -want, +got:\n%s", diff)
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason  string
		fault   *terdutdouble.Fault
		wantErr error
		empty   bool
	}{
		"ClearsPolicy": {reason: "Delete PUTs the empty policy.", empty: true},
		"ServerErrorKeepsFinalizer": {
			reason:  "A failing PUT is an error: the finalizer stays and the policy too.",
			fault:   &terdutdouble.Fault{Method: http.MethodPut, Route: "/api/teams/{id}/escalation", Status: http.StatusServiceUnavailable},
			wantErr: errors.Wrap(&terdut.APIError{Method: "PUT", Path: "/api/teams/" + extclient.FormatID(controllertest.FirstID) + "/escalation", StatusCode: 503, Message: "injected fault"}, errDeletePolicy),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, teamID, alice := fixture(t)
			_ = f.Client.PutEscalationPolicy(t.Context(), teamID, serverPolicy(alice))
			if tc.fault != nil {
				f.Server.AddFault(*tc.fault)
			}
			e := &external{api: f.Client}
			_, err := e.Delete(t.Context(), policy(teamID, withID(teamID)))
			if diff := cmp.Diff(tc.wantErr, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			f.Server.ClearFaults()
			got, _ := f.Client.GetEscalationPolicy(t.Context(), teamID)
			if got.IsEmpty() != tc.empty {
				t.Errorf("\n%s\nDelete(...): policy empty = %v, want %v", tc.reason, got.IsEmpty(), tc.empty)
			}
		})
	}
}

func TestDiffNormalisesDurations(t *testing.T) {
	a := terdut.EscalationPolicy{Levels: []terdut.EscalationLevel{{Timeout: "90s"}}}
	b := terdut.EscalationPolicy{Levels: []terdut.EscalationLevel{{Timeout: "1m30s", Targets: []terdut.EscalationTarget{}}}}
	if d := Diff(a, b); d != "" {
		t.Errorf("Diff of equal durations spelled differently:\n%s", d)
	}
	if d := Diff(a, terdut.EscalationPolicy{Levels: []terdut.EscalationLevel{{Timeout: time.Minute.String()}}}); d == "" {
		t.Error("Diff of different durations is empty")
	}
}

// TestDeletingEmptiesOnlyItsOwnTeamsPolicy: a tenant's EscalationPolicy for
// its own team, with another team's ID set by hand as its external name and
// a finalizer of its own, is deleted: the other team's policy (its paging)
// stays as it was.
func TestDeletingEmptiesOnlyItsOwnTeamsPolicy(t *testing.T) {
	f, own, alice := fixture(t)
	victim := f.Team(t, "Payments")
	if err := f.Client.PutEscalationPolicy(t.Context(), victim, serverPolicy(alice)); err != nil {
		t.Fatal(err)
	}
	cr := policy(own, withID(victim), withDeletion())
	e := &external{api: f.Client}
	o, err := e.Observe(t.Context(), cr)
	if err != nil {
		t.Fatalf("Observe(...): %v", err)
	}
	if o.ResourceExists {
		t.Errorf("Observe(...) of a policy being deleted reports team %d's policy as its own (its team is %d)", victim, own)
	}
	// Even a Delete the reconciler calls regardless.
	if _, err := e.Delete(t.Context(), cr); err != nil {
		t.Fatalf("Delete(...): %v", err)
	}
	got, err := f.Client.GetEscalationPolicy(t.Context(), victim)
	if err != nil || got.IsEmpty() {
		t.Errorf("team %d's policy after deleting another team's EscalationPolicy: %+v, %v; want it untouched", victim, got, err)
	}
}

// TestASecondPolicyForATeamIsRefused: a team has one policy, so a second
// EscalationPolicy for a team another one manages is refused
// (ResourceNotOwned) and writes nothing: the first one's policy stays.
func TestASecondPolicyForATeamIsRefused(t *testing.T) {
	r := aSecondPolicy(t)
	f, teamID, second, e := r.f, r.teamID, r.second, r.e
	f.Server.ResetCounters()
	_, err := e.Create(t.Context(), second)
	if !extclient.IsNotOwned(err) || second.GetCondition(xpv2.TypeReady).Reason != extclient.ReasonResourceNotOwned {
		t.Errorf("Create of a second policy for team %d: %v, Ready %q; want ResourceNotOwned", teamID, err, second.GetCondition(xpv2.TypeReady).Reason)
	}
	if n := f.Server.Count("PUT /api/teams/{id}/escalation"); n != 0 {
		t.Errorf("%d PUTs of the team's policy by the second EscalationPolicy, want 0", n)
	}
	if meta.GetExternalName(second) != "" {
		t.Errorf("the second policy took external name %q", meta.GetExternalName(second))
	}
}
