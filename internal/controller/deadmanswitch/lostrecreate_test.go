package deadmanswitch

import (
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// A switch deleted outside Kubernetes is made again (the CR wins);
// that re-create's POST commits and its answer is lost (502), so the
// external name still names the old, gone switch. The MR is then deleted:
// Observe looks only for the old ID, confirms it gone, and lets go. The
// switch the lost re-create made stays on the server with no MR.
func TestDeletingAfterALostRecreateDeletesWhatItMade(t *testing.T) {
	lostRecreate(t, true)
}

// As above for an MR that imported its switch (external name set by hand,
// so no create of its own was ever recorded).
func TestDeletingAnImportedSwitchAfterALostRecreateDeletesWhatItMade(t *testing.T) {
	lostRecreate(t, false)
}

// lostRecreate: the MR's switch is deleted outside Kubernetes, made again,
// that re-create's answer is lost, and the MR is deleted; created says
// whether the MR had recorded a create of its own (else it imported).
func lostRecreate(t *testing.T, created bool) {
	t.Helper()
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	old := existing(t, f, teamID, onServer())
	cr := sw(teamID, withID(old))
	cr.SetUID("uid-sw")
	if created {
		meta.SetExternalCreateSucceeded(cr, controllertest.Now().Add(-time.Hour))
	}
	if err := f.Client.DeleteDeadmanSwitch(t.Context(), teamID, old); err != nil { // by hand
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec}, record: rec, absence: absence}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusBadGateway, Commit: true, Times: 1})
	for range 10 {
		o, err := e.Observe(t.Context(), cr)
		if err == nil && !o.ResourceExists {
			if _, err := e.Create(t.Context(), cr); err == nil {
				t.Fatal("setup: the re-create's answer was not lost")
			}
			// what markAttempt (e.kube is nil here) wrote before the POST
			meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: controllertest.Now().Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog", extclient.AnnotationCreateAttemptedOver: extclient.FormatID(old)})
			break
		}
		now = now.Add(20 * time.Second)
	}
	if n := len(f.Server.Snapshot().Switches); n != 1 || meta.GetExternalName(cr) != extclient.FormatID(old) {
		t.Fatalf("setup: %d switches, external name %q; want the re-create committed and the old ID still recorded", n, meta.GetExternalName(cr))
	}
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	gone := deleting(t, e, cr, 10, func() { now = now.Add(20 * time.Second) })
	if n := len(f.Server.Snapshot().Switches); n != 0 {
		t.Errorf("the MR let go (%v) with %d switch(es) its lost re-create made left on the server", gone, n)
	}
}

// A lost create makes at most one switch. After it, someone makes a switch
// of the same name by hand (the server has no unique names). Deleting the MR
// deletes the lost create's switch and records that it did (the runtime
// keeps nothing Observe sets while an MR is deleted): the next reconcile,
// which starts from what is stored, does not take the hand-made one for the
// lost create's and delete it too.
func TestDeletingAfterALostCreateDeletesOneSwitchNotTwo(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	mine := existing(t, f, teamID, onServer()) // the lost create's, at controllertest.Now()
	hand := existing(t, f, teamID, onServer()) // by hand, after it
	stored := sw(teamID)
	stored.SetUID("uid-sw")
	stored.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	meta.AddAnnotations(stored, map[string]string{AnnotationCreateAttempted: controllertest.Now().Add(-time.Second).Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	stored.SetDeletionTimestamp(&metav1.Time{Time: now})
	kube := storeOf(t, stored)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: kube, adopter: extclient.Adopter{Record: rec, Since: controllertest.Now().Add(-time.Hour)}, record: rec, absence: absence}
	controllertest.Deleting(t, e, 10, func() *v1alpha1.DeadmanSwitch {
		cr := &v1alpha1.DeadmanSwitch{}
		if err := kube.Get(t.Context(), client.ObjectKeyFromObject(stored), cr); err != nil {
			t.Fatal(err)
		}
		return cr
	}, func() { now = now.Add(20 * time.Second) })
	left := f.Server.Snapshot().Switches
	if len(left) != 1 || left[0].ID != hand {
		t.Errorf("switches left %+v: want only the hand-made %d (the lost create made %d)", left, hand, mine)
	}
}

// storeOf is an API server holding objs (the MR a reconcile reads and
// patches).
func storeOf(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// A deletion records the switch its lost create made only onto the MR it
// read. A reconcile that starts from a cache that has not yet seen that
// record (controller-runtime reads MRs from an informer cache; the requeue
// after Delete can beat the watch event) has no external name and searches
// again: it finds the hand-made switch of the same name, but its record is
// refused (the MR changed since it was read), so it deletes nothing.
func TestAReconcileFromAStaleCopyDeletesNoSecondSwitch(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	mine := existing(t, f, teamID, onServer()) // the lost create's
	hand := existing(t, f, teamID, onServer()) // by hand, after it
	stored := sw(teamID)
	stored.SetUID("uid-sw")
	stored.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	meta.AddAnnotations(stored, map[string]string{AnnotationCreateAttempted: controllertest.Now().Add(-time.Second).Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	stored.SetDeletionTimestamp(&metav1.Time{Time: now})
	kube := storeOf(t, stored)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: kube, adopter: extclient.Adopter{Record: rec, Since: controllertest.Now().Add(-time.Hour)}, record: rec, absence: absence}

	// Reconcile 1: reads the MR, finds the lost create's switch, records it, deletes it.
	cr := &v1alpha1.DeadmanSwitch{}
	if err := kube.Get(t.Context(), client.ObjectKeyFromObject(stored), cr); err != nil {
		t.Fatal(err)
	}
	cached := cr.DeepCopy() // what the informer cache still holds a moment later
	o, err := e.Observe(t.Context(), cr)
	if err != nil || !o.ResourceExists {
		t.Fatalf("setup: reconcile 1 Observe = %+v, %v", o, err)
	}
	if _, err := e.Delete(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	// Reconcile 2 (the runtime's requeue) starts from the cache, which has
	// not caught up with reconcile 1's patch yet.
	now = now.Add(time.Second)
	if o, err := e.Observe(t.Context(), cached); err == nil && o.ResourceExists {
		if _, err := e.Delete(t.Context(), cached); err != nil {
			t.Fatal(err)
		}
	}
	left := f.Server.Snapshot().Switches
	if len(left) != 1 || left[0].ID != hand {
		t.Errorf("switches left %+v: want only the hand-made %d (the lost create made %d): a stale read repeated the search and its record went through", left, hand, mine)
	}
}

// The server refuses a re-create (422: nothing is made). The MR forgets the
// attempt, so when the user then makes the switch by hand and deletes the MR
// (to stop its failing re-creates), the hand-made switch is not taken for
// what that create made and stays.
func TestARefusedCreateLeavesNoAttemptToLookFor(t *testing.T) {
	f := controllertest.OnTheProvidersClock(t) // the attempt is marked with time.Now()
	teamID := f.Team(t, "Platform")
	old := existing(t, f, teamID, onServer())
	stored := sw(teamID, withID(old))
	stored.SetUID("uid-sw")
	stored.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	meta.SetExternalCreateSucceeded(stored, time.Now().Add(-time.Hour))
	kube := storeOf(t, stored)
	if err := f.Client.DeleteDeadmanSwitch(t.Context(), teamID, old); err != nil { // by hand
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: kube, adopter: extclient.Adopter{Record: rec, Since: time.Now().Add(-2 * time.Hour)}, record: rec, absence: absence}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/deadman/switches", Status: http.StatusUnprocessableEntity, Times: 1})
	get := func() *v1alpha1.DeadmanSwitch {
		cr := &v1alpha1.DeadmanSwitch{}
		if err := kube.Get(t.Context(), client.ObjectKeyFromObject(stored), cr); err != nil {
			t.Fatal(err)
		}
		return cr
	}
	refused := false
	for range 10 {
		cr := get()
		if o, err := e.Observe(t.Context(), cr); err == nil && !o.ResourceExists {
			if _, err := e.Create(t.Context(), cr); !terdut.IsRefused(err) {
				t.Fatalf("setup: the re-create answered %v, want the server's 422", err)
			}
			refused = true
			break
		}
		now = now.Add(20 * time.Second)
	}
	if !refused || len(f.Server.Snapshot().Switches) != 0 {
		t.Fatalf("setup: refused %v, %d switches; want the re-create refused and nothing made", refused, len(f.Server.Snapshot().Switches))
	}
	hand := existing(t, f, teamID, onServer()) // the user makes it by hand
	cr := get()
	if err := kube.Delete(t.Context(), cr); err != nil { // sets the deletion timestamp; the finalizer holds it
		t.Fatal(err)
	}
	controllertest.Deleting(t, e, 10, get, func() { now = now.Add(20 * time.Second) })
	if left := f.Server.Snapshot().Switches; len(left) != 1 || left[0].ID != hand {
		t.Errorf("switches left %+v: want the hand-made %d kept (the refused re-create made nothing)", left, hand)
	}
}

// A switch made normally (mark and the runtime's external-create-succeeded
// in the same second), renamed later (PUT), then deleted outside
// Kubernetes; meanwhile someone made a switch of the old name by hand in the
// team. The re-create must make a switch of the spec's name, not adopt (and
// PUT over) the hand-made one as the result of a "lost" create.
func TestARenamedSwitchMadeAgainAdoptsNoHandMadeSwitchOfItsOldName(t *testing.T) {
	f := controllertest.OnTheProvidersClock(t)
	teamID := f.Team(t, "Platform")
	mark := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	old := existing(t, f, teamID, onServer())
	cr := sw(teamID, withName("renamed-watchdog"), withID(old))
	cr.SetUID("uid-sw")
	meta.AddAnnotations(cr, map[string]string{AnnotationCreateAttempted: mark.Format(time.RFC3339), AnnotationCreateAttemptedName: "prod-watchdog"})
	meta.SetExternalCreateSucceeded(cr, mark)                                      // same second: the POST took milliseconds
	if err := f.Client.DeleteDeadmanSwitch(t.Context(), teamID, old); err != nil { // outside Kubernetes
		t.Fatal(err)
	}
	hand := existing(t, f, teamID, onServer()) // by hand, the old name
	rec := &controllertest.Recorder{}
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec, Since: mark.Add(-time.Hour)}, record: rec, absence: absence}
	_, err := e.Create(t.Context(), cr)
	got, _, _ := extclient.ExternalID(cr)
	if err == nil && got == hand {
		t.Errorf("the re-create adopted the hand-made switch %d of the old name (Interrupted %v although create-succeeded was recorded)", hand, extclient.Interrupted(cr))
	}
}
