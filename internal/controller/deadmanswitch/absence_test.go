package deadmanswitch

import (
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestALyingListMakesNoSecondSwitch a list that omits a switch
// that exists (three 200 [] answers) must not make a second switch; only a
// fresh read some time after the first miss may find it gone.
func TestALyingListMakesNoSecondSwitch(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	id := existing(t, f, teamID, onServer())
	cr := sw(teamID, withID(id))
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec, absence: absence}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusOK, Body: "[]", Times: 3})
	for _, wait := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second} {
		now = now.Add(wait)
		if o, err := e.Observe(t.Context(), cr); err == nil && !o.ResourceExists {
			_, _ = e.Create(t.Context(), cr)
		}
	}
	if n := len(f.Server.Snapshot().Switches); n != 1 || meta.GetExternalName(cr) != extclient.FormatID(id) {
		t.Errorf("after three lying lists: %d switches, external name %q; want 1, %d", n, meta.GetExternalName(cr), id)
	}
}

// TestAPredecessorThatReturnsIsSaid a list that lies for longer
// than the confirmation wait defeats it, and the switch is made again. When
// the old one shows up again there are two: that must not go unsaid.
func TestAPredecessorThatReturnsIsSaid(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	id := existing(t, f, teamID, onServer())
	cr := sw(teamID, withID(id))
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec, absence: absence}
	reconcile := func() {
		if o, err := e.Observe(t.Context(), cr); err == nil && !o.ResourceExists {
			_, _ = e.Create(t.Context(), cr)
		}
	}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusOK, Body: "[]"})
	for range 5 {
		reconcile()
		now = now.Add(extclient.DefaultAbsenceConfirmation / 3)
	}
	f.Server.ClearFaults()
	if meta.GetExternalName(cr) == extclient.FormatID(id) {
		t.Fatal("the switch was not made again under a list that lies for minutes")
	}
	reconcile()
	if !slices.Contains(rec.Reasons(), extclient.ReasonPredecessorReturned) {
		t.Errorf("events %v: the old switch is back and two exist, but nothing says so", rec.Reasons())
	}
}

// A switch being deleted that a list omits (a list one item short, here for
// 30 s) is no more gone than a live one's: the MR must not let go before its
// DELETE reached the server or the absence is confirmed, or the switch stays
// on the server with no MR.
func TestADeletedSwitchAListOmitsIsDeletedAllTheSame(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	id := existing(t, f, teamID, onServer())
	cr := sw(teamID, withID(id))
	cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	f.Server.SetQuirks(terdutdouble.Quirks{ShortLists: true})
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec, absence: absence}
	// The runtime's deletion loop: Observe; Delete while it exists; the
	// finalizer goes once Observe says it does not.
	deleting(t, e, cr, 20, func() {
		now = now.Add(2 * time.Second)
		if now.Sub(time.Date(2026, 12, 4, 9, 0, 30, 0, time.UTC)) > 0 {
			f.Server.SetQuirks(terdutdouble.Quirks{})
		}
	})
	if n := len(f.Server.Snapshot().Switches); n != 0 {
		t.Errorf("the MR let go with %d switches left on the server", n)
	}
}

// A create whose answer was lost (the provider died after the POST) looks
// for what it made before it POSTs again. A list one item short and in a
// new order each time shows the switch to one read and not to the next:
// what a read showed is adopted, never made a second time.
func TestAnInterruptedCreateAdoptsWhatAnyReadShowed(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	existing(t, f, teamID, terdut.DeadmanSwitch{Name: "nightly-backup", Matcher: "alertname=Backup", Timeout: "1h", Severity: "warning"})
	made := existing(t, f, teamID, onServer())
	f.Server.SetQuirks(terdutdouble.Quirks{Reorder: true, ShortLists: true})
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	adopted := 0
	for i := range 40 {
		cr := sw(teamID)
		meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: now.Add(-time.Minute).Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
		absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
		absence.Clock = func() time.Time { return now }
		rec := &controllertest.Recorder{}
		e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec, absence: absence}
		if _, err := e.Create(t.Context(), cr); err == nil {
			adopted++
			if got := meta.GetExternalName(cr); got != extclient.FormatID(made) {
				t.Fatalf("attempt %d: external name %q, want the switch the lost create made (%d)", i, got, made)
			}
		}
		if n := len(f.Server.Snapshot().Switches); n != 2 {
			t.Fatalf("attempt %d: %d switches on the server, want 2: a read showed the switch the lost create made, and another was made beside it", i, n)
		}
	}
	if adopted == 0 {
		t.Error("no attempt adopted the switch, though half the reads show it")
	}
}

// An MR deleted after a create whose answer was lost (the attempt marked,
// its ID never recorded) deletes the switch that create made; it must not
// let go at once and leave the switch on the server with no MR.
func TestDeletingAnMRWhoseCreateWasLostDeletesWhatItMade(t *testing.T) {
	f, gone := deleteAfterLostCreate(t, time.Time{}) // the switch on the server is the lost create's
	if n := len(f.Server.Snapshot().Switches); n != 0 {
		t.Errorf("the MR let go (%v) with %d switch(es) its own lost create made left on the server", gone, n)
	}
}

// ...and a switch of that name the server made before the MR existed is not
// what its create made: the deleted MR lets go (after the absence of its own
// is confirmed) and leaves that switch alone.
func TestDeletingAnMRWhoseCreateWasLostLeavesAHandMadeSwitch(t *testing.T) {
	f, gone := deleteAfterLostCreate(t, time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)) // made by hand, before the MR
	if n := len(f.Server.Snapshot().Switches); !gone || n != 1 {
		t.Errorf("let go %v, %d switches on the server: want the MR gone and the hand-made switch kept", gone, n)
	}
}

// deleteAfterLostCreate makes a switch prod-watchdog and deletes an MR of
// that name whose create was marked but never recorded, for 100 s of
// reconciles. since is when the MR was made (zero: adopt any).
func deleteAfterLostCreate(t *testing.T, since time.Time) (*controllertest.Fixture, bool) {
	t.Helper()
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	existing(t, f, teamID, onServer()) // made by the server at controllertest.Now()
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	cr := sw(teamID)
	meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: controllertest.Now().Add(-time.Second).Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec, Since: since}, record: rec, absence: absence}
	return f, deleting(t, e, cr, 5, func() { now = now.Add(20 * time.Second) })
}

// deleting runs the runtime's deletion loop for cr at most n times, calling
// tick before each: Observe; Delete while the switch exists. It reports
// whether Observe let go (the finalizer would go).
func deleting(t *testing.T, e *external, cr *v1alpha1.DeadmanSwitch, n int, tick func()) bool {
	t.Helper()
	for range n {
		tick()
		o, err := e.Observe(t.Context(), cr)
		if err != nil {
			continue
		}
		if !o.ResourceExists {
			return true
		}
		if _, err := e.Delete(t.Context(), cr); err != nil {
			t.Fatal(err)
		}
	}
	return false
}
