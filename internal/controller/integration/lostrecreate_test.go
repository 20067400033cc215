package integration

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// An integration deleted outside Kubernetes is made again; that
// re-create's POST commits and its answer is lost (502). The external name
// still names the old, gone integration, so deleting the MR looks only for
// that ID, confirms it gone and lets go: the new integration, whose working
// key nobody holds, stays on the server.
func TestDeletingAfterALostRecreateDeletesTheIntegrationItMade(t *testing.T) {
	lostRecreate(t, true)
}

// As above for an Integration that imported its integration (external name
// set by hand, so no create of its own was ever recorded).
func TestDeletingAnImportedIntegrationAfterALostRecreateDeletesWhatItMade(t *testing.T) {
	lostRecreate(t, false)
}

// lostRecreate: the MR's integration is deleted outside Kubernetes, made
// again, that re-create's answer is lost, and the MR is deleted; created
// says whether the MR had recorded a create of its own (else it imported).
func lostRecreate(t *testing.T, created bool) {
	t.Helper()
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	s.secret.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "Integration", Name: "prod-alertmanager", UID: "uid-1", Controller: ptrTrue()}})
	cr := integ(teamID, withID(s.id))
	if created {
		meta.SetExternalCreateSucceeded(cr, controllertest.Now().Add(-time.Hour)) // its first create
	}
	k := kube(t, s.secret, cr.DeepCopy())
	if err := f.Client.DeleteIntegration(t.Context(), teamID, s.id); err != nil { // by hand
		t.Fatal(err)
	}
	now := controllertest.Now()
	e := onClock(f, k, &now, time.Time{})
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway, Commit: true, Times: 1})
	for range 10 {
		o, err := e.Observe(t.Context(), cr)
		if err == nil && !o.ResourceExists {
			if _, err := e.Create(t.Context(), cr); err == nil {
				t.Fatal("setup: the re-create's answer was not lost")
			}
			break
		}
		now = now.Add(20 * time.Second)
	}
	if n := len(f.Server.Snapshot().Integrations); n != 1 || meta.GetExternalName(cr) != extclient.FormatID(s.id) {
		t.Fatalf("setup: %d integrations, external name %q; want the re-create committed and the old ID still recorded", n, meta.GetExternalName(cr))
	}
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	gone := controllertest.Deleting(t, e, 10, func() *v1alpha1.Integration { return cr }, func() { now = now.Add(20 * time.Second) })
	if n := len(f.Server.Snapshot().Integrations); n != 0 {
		t.Errorf("the MR let go (%v) with %d integration(s) its lost re-create made (a working key nobody holds) left on the server", gone, n)
	}
}

func ptrTrue() *bool { b := true; return &b }

// As for switches: after a lost create (its Secret marked "creating"), an
// integration of the same name is made by hand. Deleting the MR deletes the
// lost create's integration and records that it did; the next reconcile,
// which starts from what is stored, leaves the hand-made one (and the key its
// sender holds).
func TestDeletingAfterALostCreateDeletesOneIntegrationNotTwo(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	stored := integ(teamID, withDeletion())
	now := controllertest.Now()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team-a", Name: secret,
		Annotations:     map[string]string{AnnotationCreating: now.Add(-time.Second).UTC().Format(time.RFC3339), AnnotationCreatingName: "prod-am", AnnotationIntegration: stored.GetName()},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "Integration", Name: stored.GetName(), UID: stored.GetUID(), Controller: ptrTrue()}},
	}}
	mine, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am") // the lost create's
	if err != nil {
		t.Fatal(err)
	}
	hand, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am") // by hand, after it
	if err != nil {
		t.Fatal(err)
	}
	k := kube(t, sec, stored)
	e := onClock(f, k, &now, now.Add(-time.Hour))
	controllertest.Deleting(t, e, 10, fromStore(t, k, stored), func() { now = now.Add(20 * time.Second) })
	if left := f.Server.Snapshot().Integrations; len(left) != 1 || left[0].ID != hand.ID {
		t.Errorf("%d integrations left: want only the hand-made %d (the lost create made %d)", len(left), hand.ID, mine.ID)
	}
}

// An Integration whose Secret keeps a "creating" mark (a create that never
// recorded its result) is then pointed by hand at an
// integration made in the UI (external name set by hand, policies without
// Create: an import, so no external-create-succeeded ever). Deleting it
// deletes the imported one, as asked, and nothing else: an MR that never
// recorded a create of its own does not look for what one made once its
// recorded integration is gone, so another hand-made integration of the same
// name, whose key a sender holds, stays.
func TestDeletingAnImportedIntegrationDeletesOnlyThatOne(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	imported, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am") // by hand
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am") // by hand, another sender's
	if err != nil {
		t.Fatal(err)
	}
	stored := integ(teamID, withID(imported.ID), withDeletion())
	stored.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionDelete})
	now := controllertest.Now()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team-a", Name: secret,
		// left by a create before the import
		Annotations:     map[string]string{AnnotationCreating: now.Add(-time.Second).UTC().Format(time.RFC3339), AnnotationCreatingName: "prod-am", AnnotationIntegration: stored.GetName()},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "Integration", Name: stored.GetName(), UID: stored.GetUID(), Controller: ptrTrue()}},
	}}
	k := kube(t, sec, stored)
	e := onClock(f, k, &now, now.Add(-time.Hour))
	controllertest.Deleting(t, e, 10, fromStore(t, k, stored), func() { now = now.Add(20 * time.Second) })
	if left := f.Server.Snapshot().Integrations; len(left) != 1 || left[0].ID != other.ID {
		t.Errorf("%d integrations left: want only %d (made by hand, never this MR's); the MR imported and deleted %d", len(left), other.ID, imported.ID)
	}
}

// The server refuses a re-create (422: nothing is made). The Secret goes back
// to what it held, with no "creating" mark, so when the user then makes the
// integration by hand and deletes the MR, the hand-made integration (and the
// key its sender holds) is not taken for what that create made, and stays.
func TestARefusedCreateLeavesNoMarkToLookFor(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	stored := integ(teamID, withID(s.id))
	stored.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	meta.SetExternalCreateSucceeded(stored, controllertest.Now().Add(-time.Hour))
	s.secret.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "Integration", Name: stored.GetName(), UID: stored.GetUID(), Controller: ptrTrue()}})
	k := kube(t, s.secret, stored)
	if err := f.Client.DeleteIntegration(t.Context(), teamID, s.id); err != nil { // by hand
		t.Fatal(err)
	}
	now := controllertest.Now()
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: k, record: rec, adopter: extclient.Adopter{Record: rec, Since: now.Add(-2 * time.Hour)}, absence: extclient.NewAbsence(0), now: func() time.Time { return now }}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusUnprocessableEntity, Times: 1})
	get := fromStore(t, k, stored)
	cr := get()
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Fatalf("setup: Observe = %+v, %v; want the integration deleted by hand gone", o, err)
	}
	if _, err := e.Create(t.Context(), cr); !terdut.IsRefused(err) {
		t.Fatalf("setup: the re-create answered %v, want the server's 422", err)
	}
	hand, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am") // the user makes it by hand
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(t.Context(), get()); err != nil { // sets the deletion timestamp; the finalizer holds it
		t.Fatal(err)
	}
	controllertest.Deleting(t, e, 10, get, func() { now = now.Add(20 * time.Second) })
	if left := f.Server.Snapshot().Integrations; len(left) != 1 || left[0].ID != hand.ID {
		t.Errorf("%d integrations left: want the hand-made %d kept (the refused re-create made nothing)", len(left), hand.ID)
	}
}

// A lost create is marked on the MR as well as in its connection Secret, a
// dependent of the MR. Deleted with propagation Foreground (kubectl delete
// --cascade=foreground), the garbage collector removes the Secret while the
// MR's finalizer still holds it: the MR's own mark still says a create's
// result was lost, and the integration it made (with a working key) is
// deleted with the MR.
func TestALostCreateOutlivesItsSecretUnderForegroundDeletion(t *testing.T) {
	f := controllertest.OnTheProvidersClock(t) // the MR's mark is on the provider's clock
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	k := kube(t, cr.DeepCopy())
	now := time.Now()
	e := onClock(f, k, &now, time.Time{})
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("setup: want the lost answer")
	}
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	cr.SetFinalizers([]string{"foregroundDeletion", "finalizer.managedresource.crossplane.io"})
	if err := k.Delete(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: secret}}); err != nil { // the GC, foreground
		t.Fatal(err)
	}
	gone := controllertest.Deleting(t, e, 10, func() *v1alpha1.Integration { return cr }, func() { now = now.Add(20 * time.Second) })
	if n := len(f.Server.Snapshot().Integrations); n != 0 {
		t.Errorf("the MR let go (%v) with %d integration(s) its lost create made left on the server", gone, n)
	}
}

// An Integration x whose writeConnectionSecretToRef names the Secret of
// another Integration MR (copy-paste) runs Create: it is refused while
// preparing the Secret (ConnectionSecretMustBeControllableBy), before any
// POST, and before anything is marked. The user then makes x's integration by hand (to
// unblock a sender) and deletes x: the hand-made integration, which x never
// made, must stay (as in TestARefusedCreateLeavesNoMarkToLookFor).
func TestACreateFailedBeforeItsPOSTLeavesNoMarkOnTheMR(t *testing.T) {
	f := controllertest.OnTheProvidersClock(t)
	teamID := f.Team(t, "Platform")
	y := existing(t, f, teamID) // MR team-a/prod-alertmanager (uid-1) holds it; its key in Secret `secret`
	y.secret.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other-app", UID: "uid-other", Controller: ptrTrue()}})
	y.secret.Annotations, y.secret.Data = nil, map[string][]byte{"other": []byte("x")} // another controller's Secret of that name
	x := integ(teamID, withName("staging-am"))
	x.SetName("staging-alertmanager")
	x.SetUID("uid-2")
	k := kube(t, y.secret, x.DeepCopy())
	now := time.Now()
	e := onClock(f, k, &now, now.Add(-time.Hour))
	get := fromStore(t, k, x)
	cr := get()
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	f.Server.ResetCounters()
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatalf("setup: want the Create refused at the Secret; POSTs %d, en %q", f.Server.Count("POST /api/teams/{id}/integrations"), cr.GetAnnotations())
	}
	if n := f.Server.Count("POST /api/teams/{id}/integrations"); n != 0 {
		t.Fatalf("setup: %d POSTs", n)
	}
	if extclient.Interrupted(get()) {
		t.Error("a Create that failed before its POST left its attempt marked on the MR")
	}
	hand, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "staging-am") // by hand
	if err != nil {
		t.Fatal(err)
	}
	d := get()
	d.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	if err := k.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(t.Context(), get()); err != nil {
		t.Fatal(err)
	}
	controllertest.Deleting(t, e, 10, get, func() { now = now.Add(20 * time.Second) })
	found := false
	for _, in := range f.Server.Snapshot().Integrations {
		if in.ID == hand.ID {
			found = true
		}
	}
	if !found {
		t.Errorf("deleting Integration x, whose only Create failed before any POST, deleted the hand-made integration %d (staging-am) and revoked its key", hand.ID)
	}
}
