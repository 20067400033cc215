package team

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

type option func(*v1alpha1.Team)

func team(o ...option) *v1alpha1.Team {
	cr := &v1alpha1.Team{
		ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: "team-a"},
		Spec:       v1alpha1.TeamSpec{ForProvider: v1alpha1.TeamParameters{DisplayName: "Platform"}},
	}
	for _, fn := range o {
		fn(cr)
	}
	return cr
}

func withID(id int64) option { return func(cr *v1alpha1.Team) { extclient.SetExternalID(cr, id) } }

func withExternalName(en string) option {
	return func(cr *v1alpha1.Team) { meta.SetExternalName(cr, en) }
}

func withOIDC(member, owner string) option {
	return func(cr *v1alpha1.Team) {
		cr.Spec.ForProvider.OIDC = &v1alpha1.TeamOIDC{MemberGroup: member, OwnerGroup: owner}
	}
}

func withObserved(id int64, name, member, owner string) option {
	return func(cr *v1alpha1.Team) {
		ts := metav1.NewTime(controllertest.Now())
		cr.Status.AtProvider = v1alpha1.TeamObservation{ID: id, DisplayName: name, OIDC: v1alpha1.TeamOIDC{MemberGroup: member, OwnerGroup: owner}, CreatedAt: &ts}
		cr.SetConditions(xpv2.Available())
	}
}

func apiErr(method, path string, code int, msg string) error {
	return &terdut.APIError{Method: method, Path: path, StatusCode: code, Message: msg}
}

type want struct {
	o        managed.ExternalObservation
	diff     bool
	cr       *v1alpha1.Team
	err      error
	requests int
}

func TestObserve(t *testing.T) {
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, f *controllertest.Fixture) (*v1alpha1.Team, want)
	}{
		"NoExternalName": {
			reason: "A team without an ID does not exist yet; finding that out costs no request.",
			setup: func(*testing.T, *controllertest.Fixture) (*v1alpha1.Team, want) {
				return team(), want{cr: team()}
			},
		},
		"BadExternalName": {
			reason: "A hand-set external name that is not an ID is a clear error, not a create.",
			setup: func(*testing.T, *controllertest.Fixture) (*v1alpha1.Team, want) {
				return team(withExternalName("platform")), want{cr: team(withExternalName("platform")), err: errors.Errorf(`external-name "platform" is not a terdut-server ID: set it to the object's numeric ID or remove it`)}
			},
		},
		"Gone": {
			reason: "A 404 means the team is gone: the reconciler recreates it (or drops the finalizer when deleting).",
			setup: func(*testing.T, *controllertest.Fixture) (*v1alpha1.Team, want) {
				return team(withID(999)), want{cr: team(withID(999)), requests: 1}
			},
		},
		"UpToDate": {
			reason: "An unchanged team is up to date, reported in status, and costs one GET.",
			setup: func(t *testing.T, f *controllertest.Fixture) (*v1alpha1.Team, want) {
				t.Helper()
				id := f.Team(t, "Platform")
				return team(withID(id)), want{
					o:        managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
					cr:       team(withID(id), withObserved(id, "Platform", "", "")),
					requests: 1,
				}
			},
		},
		"Drift": {
			reason: "A rename made directly on the server is drift: not up to date, with a diff.",
			setup: func(t *testing.T, f *controllertest.Fixture) (*v1alpha1.Team, want) {
				t.Helper()
				id := f.Team(t, "Platform")
				if err := f.Client.RenameTeam(t.Context(), id, "Renamed by hand"); err != nil {
					t.Fatal(err)
				}
				return team(withID(id)), want{
					o:        managed.ExternalObservation{ResourceExists: true},
					diff:     true,
					cr:       team(withID(id), withObserved(id, "Renamed by hand", "", "")),
					requests: 1,
				}
			},
		},
		"OIDCDrift": {
			reason: "OIDC groups the spec sets are compared; a different mapping is drift.",
			setup: func(t *testing.T, f *controllertest.Fixture) (*v1alpha1.Team, want) {
				t.Helper()
				id := f.Team(t, "Platform")
				return team(withID(id), withOIDC("members", "owners")), want{
					o:        managed.ExternalObservation{ResourceExists: true},
					diff:     true,
					cr:       team(withID(id), withOIDC("members", "owners"), withObserved(id, "Platform", "", "")),
					requests: 1,
				}
			},
		},
		"ServerErrorIsNotGone": {
			reason: "A 5xx is an error, never 'does not exist': nothing is recreated.",
			setup: func(t *testing.T, f *controllertest.Fixture) (*v1alpha1.Team, want) {
				t.Helper()
				id := f.Team(t, "Platform")
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}", Status: http.StatusServiceUnavailable})
				path := "/api/teams/" + itoa(id)
				return team(withID(id)), want{cr: team(withID(id)), err: errors.Wrap(apiErr("GET", path, 503, "injected fault"), errGetTeam), requests: 1}
			},
		},
		"ForbiddenIsNotGone": {
			reason: "A 403 is an error, never 'does not exist'.",
			setup: func(t *testing.T, f *controllertest.Fixture) (*v1alpha1.Team, want) {
				t.Helper()
				id := f.Team(t, "Platform")
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}", Status: http.StatusForbidden})
				path := "/api/teams/" + itoa(id)
				return team(withID(id)), want{cr: team(withID(id)), err: errors.Wrap(apiErr("GET", path, 403, "injected fault"), errGetTeam), requests: 1}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			cr, w := tc.setup(t, f)
			f.Server.ResetCounters()
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}

			got, err := e.Observe(t.Context(), cr)
			if diff := cmp.Diff(w.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(w.o, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if (got.Diff != "") != w.diff {
				t.Errorf("\n%s\nObserve(...): Diff = %q, want a diff: %v", tc.reason, got.Diff, w.diff)
			}
			if diff := cmp.Diff(w.cr, cr, test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want CR, +got CR:\n%s", tc.reason, diff)
			}
			if n := f.Server.Total(); n != w.requests {
				t.Errorf("\n%s\nObserve(...): %d requests to the server, want %d", tc.reason, n, w.requests)
			}
		})
	}
}

func itoa(n int64) string { return extclient.FormatID(n) }

func TestCreate(t *testing.T) {
	type want struct {
		adopted bool
		err     error
		posts   int
		teams   int
	}
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, f *controllertest.Fixture)
		want   want
	}{
		"Create": {
			reason: "No team of this name: POST one and record its ID.",
			want:   want{posts: 1, teams: 1},
		},
		"AdoptByName": {
			reason: "A team of this name exists (e.g. a crash before its ID was recorded): adopt it, no POST.",
			setup:  func(t *testing.T, f *controllertest.Fixture) { t.Helper(); f.Team(t, "Platform") },
			want:   want{adopted: true, teams: 1},
		},
		"AdoptAfter409": {
			reason: "The lookup missed the team but POST answers 409: look it up again and adopt it, announced like any adoption.",
			setup: func(t *testing.T, f *controllertest.Fixture) {
				t.Helper()
				f.Team(t, "Platform")
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams", Status: http.StatusOK, Body: "[]", Times: 1})
			},
			want: want{adopted: true, posts: 1, teams: 1},
		},
		"ServerError": {
			reason: "A failing POST is an error and records no ID.",
			setup: func(_ *testing.T, f *controllertest.Fixture) {
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams", Status: http.StatusInternalServerError})
			},
			want: want{err: errors.Wrapf(apiErr("POST", "/api/teams", 500, "injected fault"), "cannot create %s %q", "team", "Platform"), posts: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			f.Server.ResetCounters()
			rec := &controllertest.Recorder{}
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}}
			cr := team()

			_, err := e.Create(t.Context(), cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Fatalf("\n%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			st := f.Server.Snapshot()
			if len(st.Teams) != tc.want.teams {
				t.Errorf("\n%s\nCreate(...): %d teams on the server, want %d", tc.reason, len(st.Teams), tc.want.teams)
			}
			if n := f.Server.Count("POST /api/teams"); n != tc.want.posts {
				t.Errorf("\n%s\nCreate(...): %d POSTs, want %d", tc.reason, n, tc.want.posts)
			}
			if tc.want.err == nil && meta.GetExternalName(cr) != itoa(st.Teams[0].ID) {
				t.Errorf("\n%s\nCreate(...): external-name %q, want the team's ID %d", tc.reason, meta.GetExternalName(cr), st.Teams[0].ID)
			}
			if tc.want.err != nil && meta.GetExternalName(cr) != "" {
				t.Errorf("\n%s\nCreate(...): external-name %q set after a failed create", tc.reason, meta.GetExternalName(cr))
			}
			if got := len(rec.Events) > 0; got != tc.want.adopted {
				t.Errorf("\n%s\nCreate(...): adoption event %v, want %v", tc.reason, rec.Reasons(), tc.want.adopted)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	cases := map[string]struct {
		reason  string
		cr      func(id int64) *v1alpha1.Team
		setup   func(t *testing.T, f *controllertest.Fixture, id int64)
		wantErr func(id int64) error
		want    terdut.Team
	}{
		"Rename": {
			reason: "A new display name renames the team in place (PUT).",
			cr:     func(id int64) *v1alpha1.Team { return team(withID(id)) },
			setup: func(t *testing.T, f *controllertest.Fixture, id int64) {
				t.Helper()
				_ = f.Client.RenameTeam(t.Context(), id, "Old name")
			},
			want: terdut.Team{Name: "Platform"},
		},
		"OIDCGroups": {
			reason: "OIDC groups in the spec are PUT to the server.",
			cr:     func(id int64) *v1alpha1.Team { return team(withID(id), withOIDC("members", "owners")) },
			want:   terdut.Team{Name: "Platform", OIDCMemberGroup: "members", OIDCOwnerGroup: "owners"},
		},
		"NameTaken": {
			reason: "Renaming onto another team's name is a clear error that names the name.",
			cr:     func(id int64) *v1alpha1.Team { return team(withID(id)) },
			setup: func(t *testing.T, f *controllertest.Fixture, id int64) {
				t.Helper()
				_ = f.Client.RenameTeam(t.Context(), id, "Old name")
				f.Team(t, "Platform")
			},
			wantErr: func(int64) error { return errors.Errorf(errNameTaken, "Platform") },
			want:    terdut.Team{Name: "Old name"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			id := f.Team(t, "Platform")
			if tc.setup != nil {
				tc.setup(t, f, id)
			}
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
			cr := tc.cr(id)
			if _, err := e.Observe(t.Context(), cr); err != nil {
				t.Fatal(err)
			}
			_, err := e.Update(t.Context(), cr)
			var wantErr error
			if tc.wantErr != nil {
				wantErr = tc.wantErr(id)
			}
			if diff := cmp.Diff(wantErr, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			got, _ := f.Client.GetTeam(t.Context(), id)
			tc.want.ID, tc.want.CreatedAt = id, got.CreatedAt
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("\n%s\nUpdate(...): server team -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDriftIsReverted(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform")
	cr := team(withID(id), withOIDC("members", "owners"))
	_ = f.Client.RenameTeam(t.Context(), id, "Changed on the server")
	_ = f.Client.SetOIDCGroups(t.Context(), id, terdut.OIDCGroups{MemberGroup: "someone-else"})

	e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	o, err := e.Observe(t.Context(), cr)
	if err != nil || o.ResourceUpToDate {
		t.Fatalf("Observe after a server-side change = %+v, %v; want not up to date", o, err)
	}
	if _, err := e.Update(t.Context(), cr); err != nil {
		t.Fatalf("Update: %v", err)
	}
	e = &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	if o, err := e.Observe(t.Context(), cr); err != nil || !o.ResourceUpToDate {
		t.Errorf("Observe after Update = %+v, %v; want up to date (the CR wins)", o, err)
	}
}

func (k *keys) TeamKeyState(_ context.Context, teamID int64) (credentials.TeamKeyState, bool, error) {
	st, ok := k.state[teamID]
	return st, ok, nil
}

func (k *keys) RotateTeamKey(_ context.Context, teamID int64, request string) error {
	k.rotated = append(k.rotated, request)
	k.state[teamID] = credentials.TeamKeyState{MintedAt: controllertest.Now(), Request: request}
	return nil
}

func (k *keys) HoldsTeamKey(_ context.Context, teamID int64) (bool, error) {
	return k.held[teamID], nil
}

func (k *keys) RevokeTeamKey(_ context.Context, teamID int64) error {
	if k.failRevoke > 0 {
		k.failRevoke--
		return errors.New("injected: cannot delete the team key Secret")
	}
	delete(k.held, teamID)
	return nil
}

// TestObservationSurvivesTheAPIServer: the status Observe writes equals the
// one the API server hands back (JSON, times in seconds), so an unchanged
// Team's status is not written again (adjust.QuietStatus compares them).
func TestObservationSurvivesTheAPIServer(t *testing.T) {
	created := time.Date(2026, 12, 5, 23, 4, 5, 123456789, time.UTC)
	o := Observation(&terdut.Team{ID: 7, Name: "Platform", CreatedAt: created})
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var stored v1alpha1.TeamObservation
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(o, stored) {
		t.Errorf("observed %v, stored %v: every reconcile would write the status again", o.CreatedAt, stored.CreatedAt)
	}
	if o.CreatedAt == nil || !o.CreatedAt.Equal(&metav1.Time{Time: created.Truncate(time.Second)}) {
		t.Errorf("createdAt %v, want the server's %v in seconds", o.CreatedAt, created)
	}
}

// A teams list that omits a team (it lags, or it lies) is not the server's
// 404: a Team whose rename is pending is not made again beside its team, and
// a Team being deleted does not let its finalizer go with its team left on
// the server.
func TestATeamTheListOmitsIsReadByItself(t *testing.T) {
	cases := map[string]struct {
		reason   string
		deleting bool
	}{
		"RenamePending": {reason: "Observe must find the team (so the rename is an Update), not report it gone (a Create of a second team)."},
		"Deleting":      {reason: "Observe must find the team, so Delete sends its DELETE.", deleting: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			id := f.Team(t, "Platform")
			c, err := terdut.New(terdut.Options{Endpoint: f.URL, Token: controllertest.AdminKey, MaxRetries: -1, ListMaxAge: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams", Status: http.StatusOK, Body: "[]"})
			cr := team(withID(id), withObserved(id, "Platform", "", ""))
			cr.Spec.ForProvider.DisplayName = "Platform (renamed)"
			if tc.deleting {
				now := metav1.Now()
				cr.SetDeletionTimestamp(&now)
			}
			e := &external{api: c, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
			o, err := e.Observe(t.Context(), cr)
			if err != nil {
				t.Fatalf("\n%s\nObserve(...): %v", tc.reason, err)
			}
			if !o.ResourceExists {
				t.Fatalf("\n%s\nObserve(...) with the teams list answering [] reports team %d gone", tc.reason, id)
			}
			if tc.deleting {
				if _, err := e.Delete(t.Context(), cr); err != nil {
					t.Fatalf("Delete(...): %v", err)
				}
				if n := f.Server.Count("DELETE /api/teams/{id}"); n != 1 {
					t.Errorf("\n%s\nDELETEs of the team: %d, want 1", tc.reason, n)
				}
				return
			}
			if _, err := e.Update(t.Context(), cr); err != nil {
				t.Fatalf("Update(...): %v", err)
			}
			st := f.Server.Snapshot()
			if len(st.Teams) != 1 || st.Teams[0].Name != "Platform (renamed)" {
				t.Errorf("\n%s\nteams on the server after the rename: %+v, want one, renamed", tc.reason, st.Teams)
			}
		})
	}
}

// TestATeamRotatesItsTeamsKey: a team's scoped key is rotated when its
// interval (720h unless keyRotation says otherwise) has passed or a new
// keyRotation.rotationRequest is set; status shows when it was minted and
// when it is rotated next. An Observe-only reconcile never rotates.
func TestATeamRotatesItsTeamsKey(t *testing.T) {
	now := controllertest.Now()
	cases := map[string]struct {
		reason  string
		minted  time.Time
		handled string
		spec    *v1alpha1.KeyRotation
		want    []string // the rotation requests RotateTeamKey gets
	}{
		"Fresh": {
			reason: "A key minted an hour ago is not due.",
			minted: now.Add(-time.Hour),
		},
		"DefaultInterval": {
			reason: "Without keyRotation, a key older than 720h is rotated.",
			minted: now.Add(-721 * time.Hour),
			want:   []string{""},
		},
		"OwnInterval": {
			reason: "keyRotation.interval 24h: a key of 25h is rotated.",
			minted: now.Add(-25 * time.Hour),
			spec:   &v1alpha1.KeyRotation{Interval: &metav1.Duration{Duration: 24 * time.Hour}},
			want:   []string{""},
		},
		"Requested": {
			reason: "A new rotationRequest rotates at once, and is recorded.",
			minted: now.Add(-time.Hour),
			spec:   &v1alpha1.KeyRotation{RotationRequest: "2026-12-07"},
			want:   []string{"2026-12-07"},
		},
		"RequestHandled": {
			reason:  "A rotationRequest the key was already minted for is not rotated again.",
			minted:  now.Add(-time.Hour),
			handled: "2026-12-07",
			spec:    &v1alpha1.KeyRotation{RotationRequest: "2026-12-07"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			id := f.Team(t, "Platform")
			k := &keys{held: map[int64]bool{id: true}, state: map[int64]credentials.TeamKeyState{id: {MintedAt: tc.minted, Request: tc.handled}}}
			cr := team(withID(id))
			cr.Spec.ForProvider.KeyRotation = tc.spec
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}, keys: k, now: func() time.Time { return now }}
			o, err := e.Observe(t.Context(), cr)
			if err != nil {
				t.Fatal(err)
			}
			if o.ResourceUpToDate != (len(tc.want) == 0) {
				t.Errorf("\n%s\nObserve: up to date %t, want %t (diff %q)", tc.reason, o.ResourceUpToDate, len(tc.want) == 0, o.Diff)
			}
			key := cr.Status.AtProvider.Key
			interval := v1alpha1.DefaultTeamKeyRotation
			if tc.spec != nil && tc.spec.Interval != nil {
				interval = tc.spec.Interval.Duration
			}
			if key == nil || key.MintedAt == nil || !key.MintedAt.Time.Equal(tc.minted) || !key.NextRotationAt.Time.Equal(tc.minted.Add(interval)) {
				t.Errorf("\n%s\nstatus.atProvider.key = %+v, want minted %s, next %s", tc.reason, key, tc.minted, tc.minted.Add(interval))
			}
			if !o.ResourceUpToDate {
				if _, err := e.Update(t.Context(), cr); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, k.rotated, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nrotations: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReadySaysWhichSpecItIsAbout(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform")
	cr := team(withID(id))
	cr.SetGeneration(4)
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	// kubectl wait and GitOps health checks compare a condition's
	// observedGeneration with the spec's: a Ready without it reads as
	// written for some older spec.
	if c := cr.GetCondition(xpv2.TypeReady); c.Status != "True" || c.ObservedGeneration != 4 {
		t.Errorf("Ready is %s for generation %d, want True for the spec's generation 4", c.Status, c.ObservedGeneration)
	}
}
