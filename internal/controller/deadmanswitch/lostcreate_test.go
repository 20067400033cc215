package deadmanswitch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// A lost create makes at most one switch. A switch of the same name made by
// hand after the MR existed but before its create attempt (which a short list
// hid from the attempt's lookup) is not what that create made: deleting the
// MR deletes its own switch and leaves that one, even though the external
// name Observe finds is not kept while the MR is deleted.
func TestDeletingAfterALostCreateDeletesOnlyWhatThatCreateMade(t *testing.T) {
	r := newLostCreateRig(t, time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	since := r.clock.Add(-time.Hour) // the MR was made an hour ago
	*r.clock = r.clock.Add(-30 * time.Minute)
	hand, err := r.cl.CreateDeadmanSwitch(t.Context(), r.team, onServer()) // by hand, half an hour after the MR
	if err != nil {
		t.Fatal(err)
	}
	*r.clock = r.clock.Add(30 * time.Minute) // the MR's create attempt: marked, POSTed, answer lost
	stored := sw(r.team)
	stored.SetUID("uid-sw")
	meta.AddAnnotations(stored, map[string]string{AnnotationCreateAttempted: r.clock.Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	if _, err := r.cl.CreateDeadmanSwitch(t.Context(), r.team, onServer()); err != nil {
		t.Fatal(err)
	}
	// NOTE: each reconcile starts from stored: the external name Observe
	// finds is not kept while the MR is deleted (and the rig has no API
	// server for ObserveLost to record it on).
	stored.SetDeletionTimestamp(&metav1.Time{Time: *r.clock})
	e, tick := r.external(since)
	controllertest.Deleting(t, e, 10, func() *v1alpha1.DeadmanSwitch { return stored.DeepCopy() }, tick)
	left := r.srv.Snapshot().Switches
	if len(left) != 1 || left[0].ID != hand.ID {
		t.Errorf("switches left %+v: want exactly the hand-made switch %d (made before the create attempt); the MR deleted more than its lost create made", left, hand.ID)
	}
}

// A create resumed after an earlier lost attempt waits out a list's silence,
// then POSTs; that POST commits and its answer is lost too. The MR is then
// deleted while lists are one item short for 20 s (less than the 45 s wait):
// the wait Create finished before its POST does not confirm that the switch
// the POST made is gone.
func TestASilenceWaitedOutBeforeAPostDoesNotConfirmWhatItMadeGone(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	cr := sw(teamID)
	cr.SetUID("uid-sw")
	// The earlier attempt, on the server's clock (controllertest.Now).
	meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: controllertest.Now().Add(-time.Minute).Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec, absence: absence}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusBadGateway, Commit: true, Times: 1})
	for range 10 {
		_, _ = e.Create(t.Context(), cr)
		if len(f.Server.Snapshot().Switches) == 1 {
			break
		}
		now = now.Add(10 * time.Second)
	}
	if n := len(f.Server.Snapshot().Switches); n != 1 || meta.GetExternalName(cr) != "" {
		t.Fatalf("setup: %d switches, external name %q; want the resumed create's POST committed and its answer lost", n, meta.GetExternalName(cr))
	}
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	f.Server.SetQuirks(terdutdouble.Quirks{ShortLists: true})
	start := now
	gone := deleting(t, e, cr, 20, func() {
		now = now.Add(5 * time.Second)
		if now.Sub(start) > 20*time.Second {
			f.Server.SetQuirks(terdutdouble.Quirks{})
		}
	})
	if n := len(f.Server.Snapshot().Switches); n != 0 {
		t.Errorf("the MR let go (%v) after one short list, with %d switch(es) its lost create made left on the server", gone, n)
	}
}

// An MR being deleted after a lost create whose ownership check cannot be
// made (a failed list of MRs) neither deletes nor lets go: not knowing
// whether the switch is its own is not "gone".
func TestAnOwnershipCheckThatFailsIsNotReadAsGone(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	existing(t, f, teamID, onServer()) // what the lost create made
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	cr := sw(teamID)
	meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: now.Add(-time.Minute).Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	failing := func(context.Context, int64) error {
		return errors.New("cannot list managed resources to check ownership: etcdserver: request timed out")
	}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec, Check: failing}, record: rec, absence: absence}
	gone := deleting(t, e, cr, 5, func() { now = now.Add(20 * time.Second) })
	if n := len(f.Server.Snapshot().Switches); gone && n != 0 {
		t.Errorf("the MR let go while its ownership check failed, with %d switch(es) its lost create made left on the server", n)
	}
}

// lostCreateRig is a double on a settable clock and an MR of it for the
// tests below; clock is the server's (switches' created_at).
type lostCreateRig struct {
	srv   *terdutdouble.Server
	cl    *terdut.Client
	team  int64
	clock *time.Time
}

func newLostCreateRig(t *testing.T, at time.Time) *lostCreateRig {
	t.Helper()
	clock := at
	srv := terdutdouble.New(terdutdouble.Options{AdminKey: controllertest.AdminKey, Now: func() time.Time { return clock }})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cl, err := terdut.New(terdut.Options{Endpoint: hs.URL, Token: controllertest.AdminKey, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := cl.CreateTeam(t.Context(), "Platform")
	if err != nil {
		t.Fatal(err)
	}
	return &lostCreateRig{srv: srv, cl: cl, team: tm.ID, clock: &clock}
}

// deleteAll runs Observe and Delete for an MR being deleted until it lets
// go. The MR keeps what Observe sets, as the record ObserveLost patches onto
// the stored MR would (the rig has no API server to patch).
func (r *lostCreateRig) deleteAll(t *testing.T, stored *v1alpha1.DeadmanSwitch, since time.Time) bool {
	t.Helper()
	stored.SetDeletionTimestamp(&metav1.Time{Time: *r.clock})
	e, tick := r.external(since)
	return deleting(t, e, stored, 10, tick)
}

// external is the switch's external on the rig's double; tick moves its
// absence clock 20 s on.
func (r *lostCreateRig) external(since time.Time) (*external, func()) {
	now := *r.clock
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	return &external{api: r.cl, adopter: extclient.Adopter{Record: rec, Since: since}, record: rec, absence: absence}, func() { now = now.Add(20 * time.Second) }
}

// Deleting an MR deletes at most a switch of its own name. The name and time
// of a create attempt are annotations anyone who may edit the MR can write:
// set by hand on an MR that never created anything, they do not make
// deleting it delete a switch of another name.
func TestAForgedCreateAttemptDeletesNoSwitchOfAnotherName(t *testing.T) {
	r := newLostCreateRig(t, time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	since := r.clock.Add(-time.Hour) // the MR was made an hour ago
	other := onServer()
	other.Name = "billing-watchdog"
	hand, err := r.cl.CreateDeadmanSwitch(t.Context(), r.team, other) // by hand, after the MR
	if err != nil {
		t.Fatal(err)
	}
	cr := sw(r.team)
	cr.SetUID("uid-sw")
	meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: "1970-01-01T00:00:00Z", AnnotationCreateAttemptedName: "billing-watchdog"})
	if !r.deleteAll(t, cr, since) {
		t.Fatal("the MR did not let go")
	}
	left := r.srv.Snapshot().Switches
	if len(left) != 1 || left[0].ID != hand.ID {
		t.Errorf("switches left %+v: want the hand-made %q (%d); deleting an MR named %q deleted a switch of another name", left, other.Name, hand.ID, cr.Spec.ForProvider.Name)
	}
}

// Two MRs of one name in one team whose creates were both lost, 30 s apart
// (within the clock allowance, so each sees both switches as possibly its
// own): deleting either deletes the switch its own POST made, the one made
// nearest its attempt, whatever the list's order.
func TestTwoLostCreatesOfOneNameEachDeleteTheirOwn(t *testing.T) {
	r := newLostCreateRig(t, time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	since := r.clock.Add(-time.Hour)
	attempt := func(uid string) (*v1alpha1.DeadmanSwitch, int64) {
		cr := sw(r.team)
		cr.SetUID(types.UID(uid))
		meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: r.clock.Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
		made, err := r.cl.CreateDeadmanSwitch(t.Context(), r.team, onServer()) // its answer lost
		if err != nil {
			t.Fatal(err)
		}
		return cr, made.ID
	}
	first, firstID := attempt("uid-first")
	*r.clock = r.clock.Add(30 * time.Second)
	second, secondID := attempt("uid-second")
	*r.clock = r.clock.Add(time.Minute)

	if !r.deleteAll(t, second, since) {
		t.Fatal("the second MR did not let go")
	}
	left := r.srv.Snapshot().Switches
	if len(left) != 1 || left[0].ID != firstID {
		t.Fatalf("after deleting the second MR, switches left %+v: want only the first MR's %d (the second's was %d)", left, firstID, secondID)
	}
	if !r.deleteAll(t, first, since) {
		t.Fatal("the first MR did not let go")
	}
	if left := r.srv.Snapshot().Switches; len(left) != 0 {
		t.Errorf("after deleting both MRs, switches left %+v", left)
	}
}
