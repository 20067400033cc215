package deadmanswitch

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

type option func(*v1alpha1.DeadmanSwitch)

func sw(teamID int64, o ...option) *v1alpha1.DeadmanSwitch {
	cr := &v1alpha1.DeadmanSwitch{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-watchdog", Namespace: "team-a"},
		Spec: v1alpha1.DeadmanSwitchSpec{ForProvider: v1alpha1.DeadmanSwitchParameters{
			TeamID: &teamID, Name: "prod-watchdog", Matcher: "alertname=Watchdog,cluster=prod", Timeout: "15m", Severity: "critical",
		}},
	}
	for _, fn := range o {
		fn(cr)
	}
	return cr
}

func withID(id int64) option {
	return func(cr *v1alpha1.DeadmanSwitch) { extclient.SetExternalID(cr, id) }
}

func withName(n string) option {
	return func(cr *v1alpha1.DeadmanSwitch) { cr.Spec.ForProvider.Name = n }
}

func onServer() terdut.DeadmanSwitch {
	return terdut.DeadmanSwitch{Name: "prod-watchdog", Matcher: "cluster=prod,alertname=Watchdog", Timeout: "15m0s", Severity: "critical"}
}

func existing(t *testing.T, f *controllertest.Fixture, teamID int64, s terdut.DeadmanSwitch) int64 {
	t.Helper()
	out, err := f.Client.CreateDeadmanSwitch(t.Context(), teamID, s)
	if err != nil {
		t.Fatal(err)
	}
	return out.ID
}

func TestObserve(t *testing.T) {
	type want struct {
		o        managed.ExternalObservation
		diff     bool
		err      error
		requests int
	}
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, f *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch
		want   want
	}{
		"NoExternalName": {
			reason: "A switch without an ID does not exist yet; no request.",
			setup:  func(_ *testing.T, _ *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch { return sw(teamID) },
		},
		"UpToDate": {
			reason: "Equal matcher (in any order) and duration (in any spelling): up to date, one list request.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch {
				t.Helper()
				return sw(teamID, withID(existing(t, f, teamID, onServer())))
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, requests: 1},
		},
		"DerivedNameUpToDate": {
			reason: "An empty spec name matches the name the server derived from the matcher.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch {
				t.Helper()
				s := onServer()
				s.Name = ""
				return sw(teamID, withName(""), withID(existing(t, f, teamID, s)))
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, requests: 1},
		},
		"Drift": {
			reason: "A timeout changed on the server is drift.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch {
				t.Helper()
				s := onServer()
				s.Timeout = "1h"
				return sw(teamID, withID(existing(t, f, teamID, s)))
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true}, diff: true, requests: 1},
		},
		"Gone": {
			reason: "A switch missing from its team's list, and from a fresh read of it, is gone.",
			setup: func(_ *testing.T, _ *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch {
				return sw(teamID, withID(999))
			},
			want: want{requests: 2},
		},
		"ServerErrorIsNotGone": {
			reason: "A 5xx on the list is an error, not a missing switch.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) *v1alpha1.DeadmanSwitch {
				t.Helper()
				id := existing(t, f, teamID, onServer())
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusInternalServerError})
				return sw(teamID, withID(id))
			},
			want: want{err: errors.Wrap(&terdut.APIError{Method: "GET", Path: "/api/teams/" + extclient.FormatID(controllertest.FirstID) + "/deadman/switches", StatusCode: 500, Message: "injected fault"}, errListSwitches), requests: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			teamID := f.Team(t, "Platform")
			cr := tc.setup(t, f, teamID)
			f.Server.ResetCounters()
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
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
			if got.ResourceExists && (cr.GetCondition(xpv2.TypeReady).Status != "True" || cr.Status.AtProvider.Name == "") {
				t.Errorf("\n%s\nObserve(...): an existing switch must be Available with its server name in status; got %+v", tc.reason, cr.Status)
			}
			if n := f.Server.Total(); n != tc.want.requests {
				t.Errorf("\n%s\nObserve(...): %d requests, want %d", tc.reason, n, tc.want.requests)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	type want struct {
		switches int
		posts    int
		adopted  bool
		err      bool
	}
	cases := map[string]struct {
		reason string
		cr     func(teamID int64) *v1alpha1.DeadmanSwitch
		setup  func(t *testing.T, f *controllertest.Fixture, teamID int64)
		want   want
	}{
		"Create": {
			reason: "No switch of this name: POST one.",
			cr:     func(teamID int64) *v1alpha1.DeadmanSwitch { return sw(teamID) },
			want:   want{switches: 1, posts: 1},
		},
		"AdoptByName": {
			reason: "A switch of this name exists (no unique constraint to rely on): adopt it, no POST.",
			cr:     func(teamID int64) *v1alpha1.DeadmanSwitch { return sw(teamID) },
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) {
				t.Helper()
				existing(t, f, teamID, onServer())
			},
			want: want{switches: 1, adopted: true},
		},
		"AdoptDerivedName": {
			reason: "With no name in the spec, the server-derived name is the one matched.",
			cr:     func(teamID int64) *v1alpha1.DeadmanSwitch { return sw(teamID, withName("")) },
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) {
				t.Helper()
				existing(t, f, teamID, terdut.DeadmanSwitch{Matcher: "cluster=prod,alertname=Watchdog", Timeout: "15m", Severity: "critical"})
			},
			want: want{switches: 1, adopted: true},
		},
		"AdoptAfter409": {
			reason: "A POST that committed but answered 409: list again and adopt.",
			cr:     func(teamID int64) *v1alpha1.DeadmanSwitch { return sw(teamID) },
			setup: func(_ *testing.T, f *controllertest.Fixture, _ int64) {
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusConflict, Commit: true, Times: 1})
			},
			want: want{switches: 1, posts: 1, adopted: true},
		},
		"ServerError": {
			reason: "A failing POST is an error and records no ID.",
			cr:     func(teamID int64) *v1alpha1.DeadmanSwitch { return sw(teamID) },
			setup: func(_ *testing.T, f *controllertest.Fixture, _ int64) {
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusInternalServerError})
			},
			want: want{posts: 1, err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			teamID := f.Team(t, "Platform")
			if tc.setup != nil {
				tc.setup(t, f, teamID)
			}
			f.Server.ResetCounters()
			rec := &controllertest.Recorder{}
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}}
			cr := tc.cr(teamID)
			_, err := e.Create(t.Context(), cr)
			if (err != nil) != tc.want.err {
				t.Fatalf("\n%s\nCreate(...): %v, want error %v", tc.reason, err, tc.want.err)
			}
			st := f.Server.Snapshot()
			if len(st.Switches) != tc.want.switches {
				t.Errorf("\n%s\nCreate(...): %d switches on the server, want %d", tc.reason, len(st.Switches), tc.want.switches)
			}
			if n := f.Server.Count("POST /api/teams/{id}/deadman/switches"); n != tc.want.posts {
				t.Errorf("\n%s\nCreate(...): %d POSTs, want %d", tc.reason, n, tc.want.posts)
			}
			if !tc.want.err && meta.GetExternalName(cr) != extclient.FormatID(st.Switches[0].ID) {
				t.Errorf("\n%s\nCreate(...): external-name %q, want %d", tc.reason, meta.GetExternalName(cr), st.Switches[0].ID)
			}
			if (len(rec.Events) > 0) != tc.want.adopted {
				t.Errorf("\n%s\nCreate(...): events %v, want an adoption event: %v", tc.reason, rec.Reasons(), tc.want.adopted)
			}
		})
	}
}

func TestUpdateKeepsID(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := onServer()
	s.Timeout, s.Severity = "1h", "info"
	id := existing(t, f, teamID, s)
	cr := sw(teamID, withID(id))
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceUpToDate {
		t.Fatalf("Observe = %+v, %v; want drift", o, err)
	}
	if _, err := e.Update(t.Context(), cr); err != nil {
		t.Fatalf("Update: %v", err)
	}
	list, _ := f.Client.ListDeadmanSwitches(t.Context(), teamID)
	want := []terdut.DeadmanSwitch{{ID: id, Name: "prod-watchdog", Matcher: "alertname=Watchdog,cluster=prod", Timeout: "15m", Severity: "critical", CreatedAt: controllertest.Now().UTC()}}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("switches after Update (same ID, spec values): -want, +got:\n%s", diff)
	}
	if o, err := e.Observe(t.Context(), cr); err != nil || !o.ResourceUpToDate {
		t.Errorf("Observe after Update = %+v, %v; want up to date (drift reverted)", o, err)
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason string
		fault  *terdutdouble.Fault
		gone   bool
		err    bool
	}{
		"Delete": {reason: "DELETE removes the switch.", gone: true},
		"ServerErrorKeepsFinalizer": {
			reason: "A failing DELETE is an error; the switch stays.",
			fault:  &terdutdouble.Fault{Method: http.MethodDelete, Route: "/api/teams/{id}/deadman/switches/{sid}", Status: http.StatusServiceUnavailable},
			err:    true,
		},
		"AlreadyGone": {
			reason: "A 404 on DELETE is success.",
			fault:  &terdutdouble.Fault{Method: http.MethodDelete, Route: "/api/teams/{id}/deadman/switches/{sid}", Status: http.StatusNotFound, Commit: true},
			gone:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			teamID := f.Team(t, "Platform")
			id := existing(t, f, teamID, onServer())
			if tc.fault != nil {
				f.Server.AddFault(*tc.fault)
			}
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
			_, err := e.Delete(t.Context(), sw(teamID, withID(id)))
			if (err != nil) != tc.err {
				t.Errorf("\n%s\nDelete(...): %v, want error %v", tc.reason, err, tc.err)
			}
			if gone := len(f.Server.Snapshot().Switches) == 0; gone != tc.gone {
				t.Errorf("\n%s\nDelete(...): gone %v, want %v", tc.reason, gone, tc.gone)
			}
		})
	}
}

// TestRecreatedAfterGoneSaysSo: a switch deleted on the server behind the
// provider's back is made again (the CR wins), and a Warning names the old
// and the new ID.
func TestRecreatedAfterGoneSaysSo(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	old, err := f.Client.CreateDeadmanSwitch(t.Context(), teamID, terdut.DeadmanSwitch{Name: "prod-watchdog", Matcher: "alertname=Watchdog", Timeout: "15m", Severity: "critical"})
	if err != nil {
		t.Fatal(err)
	}
	cr := sw(teamID)
	extclient.SetExternalID(cr, old.ID)
	if err := f.Client.DeleteDeadmanSwitch(t.Context(), teamID, old.ID); err != nil {
		t.Fatal(err)
	}
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec}
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Fatalf("Observe of a deleted switch = %+v, %v; want gone", o, err)
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	newID := meta.GetExternalName(cr)
	if newID == extclient.FormatID(old.ID) || len(rec.Events) != 1 || rec.Events[0].Type != event.TypeWarning {
		t.Fatalf("external-name %s (old %d), events %+v: want a new ID and one Warning", newID, old.ID, rec.Events)
	}
	if msg := rec.Events[0].Message; !strings.Contains(msg, extclient.FormatID(old.ID)) || !strings.Contains(msg, newID) {
		t.Errorf("Warning %q does not name the old and new IDs", msg)
	}
}
