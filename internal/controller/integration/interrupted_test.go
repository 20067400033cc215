package integration

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestImportIsNotLost: an Integration imported with
// policies without Create never had the key; it is not WebhookSecretLost,
// and no Warning is emitted on every poll.
func TestImportIsNotLost(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	in, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am")
	if err != nil {
		t.Fatal(err)
	}
	cr := integ(teamID, withID(in.ID))
	cr.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: kube(t), record: rec, adopter: extclient.Adopter{Record: rec}}
	for range 3 {
		o, err := e.Observe(t.Context(), cr)
		if err != nil || !o.ResourceExists {
			t.Fatalf("Observe of an import = %+v, %v; want it existing, no error", o, err)
		}
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason == ReasonWebhookSecretLost {
		t.Errorf("an import is reported %s: %q", c.Reason, c.Message)
	}
	if slices.Contains(rec.Reasons(), string(ReasonWebhookSecretLost)) {
		t.Errorf("events %v: a Warning for a key an import never had", rec.Reasons())
	}
}

// TestOrphanCleanupIsTimeBound: an integration of the MR's
// name found long after an interrupted Create marked its Secret may be
// anyone's (one made by hand to unblock senders): it is never deleted.
func TestOrphanCleanupIsTimeBound(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	rec := &controllertest.Recorder{}
	cr := integ(teamID)
	e := &external{api: f.Client, kube: kube(t, cr.DeepCopy()), record: rec, adopter: extclient.Adopter{Record: rec}, now: func() time.Time { return now }}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("Create with a lost POST answer: want an error")
	}
	handMade := f.Server.Snapshot().Integrations[0].ID
	now = now.Add(OrphanWindow + time.Minute)
	_, _ = e.Create(t.Context(), cr)
	if n := f.Server.Count("DELETE /api/teams/{id}/integrations/{iid}"); n != 0 {
		t.Errorf("%d DELETEs of an integration of the MR's name found %s after the mark", n, OrphanWindow+time.Minute)
	}
	if st := f.Server.Snapshot(); len(st.Integrations) != 1 || st.Integrations[0].ID != handMade {
		t.Errorf("integrations %+v: want %d kept", st.Integrations, handMade)
	}
	if meta.GetExternalName(cr) != extclient.FormatID(handMade) {
		t.Errorf("external name %q, want the integration adopted (%d), its missing key reported", meta.GetExternalName(cr), handMade)
	}
}

// TestALyingListMakesNoNewKey a list that omits an integration
// that exists (three 200 [] answers in a row) must not make a second one
// and write a new key: absence is confirmed by a fresh read some time
// after, and only then is anything made in its place. One that is really
// gone is made again once confirmed.
func TestALyingListMakesNoNewKey(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	cr := integ(teamID, withID(s.id))
	k := kube(t, s.secret, cr.DeepCopy())
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: k, record: rec, adopter: extclient.Adopter{Record: rec}, absence: absence, now: func() time.Time { return now }}
	reconcile := func() error {
		e.replace = nil
		o, err := e.Observe(t.Context(), cr)
		if err != nil || o.ResourceExists {
			return err
		}
		_, err = e.Create(t.Context(), cr)
		return err
	}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/integrations", Status: http.StatusOK, Body: "[]", Times: 3})
	confirming := 0
	for _, wait := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		now = now.Add(wait)
		if err := reconcile(); err != nil {
			confirming++
		}
	}
	st := f.Server.Snapshot()
	if len(st.Integrations) != 1 || meta.GetExternalName(cr) != extclient.FormatID(s.id) {
		t.Errorf("after three lying lists: %d integrations, external name %q; want the one, %d", len(st.Integrations), meta.GetExternalName(cr), s.id)
	}
	if slices.Contains(rec.Reasons(), string(extclient.ReasonKeyRotated)) {
		t.Error("a KeyRotated Warning for an integration that was never gone")
	}
	if confirming != 3 || absence.Pending() != 0 {
		t.Errorf("%d reconciles said they were confirming, %d still pending; want 3, 0", confirming, absence.Pending())
	}

	// Really gone: made again once a fresh read after the wait agrees.
	if err := f.Client.DeleteIntegration(t.Context(), teamID, s.id); err != nil {
		t.Fatal(err)
	}
	if err := reconcile(); err == nil {
		t.Error("an integration missing from one list was made again at once")
	}
	// Retried within --max-backoff, it is missing at every read for the
	// whole wait: then it is gone.
	var err error
	for range 3 {
		now = now.Add(extclient.DefaultAbsenceConfirmation / 3)
		err = reconcile()
	}
	if err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	if id, _, _ := extclient.ExternalID(cr); id == s.id || !slices.Contains(rec.Reasons(), string(extclient.ReasonKeyRotated)) {
		t.Errorf("external name %d, events %v: want a new integration and a KeyRotated Warning", id, rec.Reasons())
	}
}

// An Integration being deleted that a list omits (one item short, for 30 s)
// must still DELETE it: one that let go on the list's word would leave a
// webhook that keeps working with no MR.
func TestADeletedIntegrationAListOmitsIsDeletedAllTheSame(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	cr := integ(teamID, withID(s.id))
	cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	start := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	now := start
	e := onClock(f, kube(t, s.secret), &now, time.Time{})
	f.Server.SetQuirks(terdutdouble.Quirks{ShortLists: true})
	for range 20 {
		now = now.Add(2 * time.Second)
		if now.Sub(start) > 30*time.Second {
			f.Server.SetQuirks(terdutdouble.Quirks{})
		}
		o, err := e.Observe(t.Context(), cr)
		if err != nil {
			continue
		}
		if !o.ResourceExists {
			break
		}
		if _, err := e.Delete(t.Context(), cr); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.Server.Snapshot().Integrations); n != 0 {
		t.Errorf("the MR let go with %d integrations left on the server", n)
	}
}

// A create whose answer was lost (the POST committed, the key never
// written) looks for what it made before it POSTs again. A list one item
// short and in a new order each time shows that integration to one read and
// not to the next: whatever a read showed is dealt with (deleted, as nobody
// holds its key, and made again with the key in the Secret), never left
// beside a second one.
func TestAnInterruptedCreateDealsWithWhatAnyReadShowed(t *testing.T) {
	f := controllertest.New(t)
	f.Server.SetQuirks(terdutdouble.Quirks{Reorder: true, ShortLists: true})
	// NOTE: each round reads in other orders: together they take the
	// paths where one read shows the integration and the next does not.
	for round := range 8 {
		interruptedCreateUnderShortLists(t, f, f.Team(t, fmt.Sprintf("Platform %d", round)))
	}
}

func interruptedCreateUnderShortLists(t *testing.T, f *controllertest.Fixture, teamID int64) {
	t.Helper()
	if _, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "staging-am"); err != nil {
		t.Fatal(err)
	}
	cr := integ(teamID)
	k := kube(t, cr.DeepCopy())
	// NOTE: the clock stands still: an absence is never confirmed, so
	// only a read that shows the integration lets a Create go on.
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = controllertest.Now
	rec := &controllertest.Recorder{}
	ext := func() *external {
		return &external{api: f.Client, kube: k, record: rec, adopter: extclient.Adopter{Record: rec}, absence: absence, now: controllertest.Now}
	}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := ext().Create(t.Context(), cr); err == nil {
		t.Fatal("Create with a lost POST answer: want an error")
	}
	named := func() []terdut.Integration {
		var out []terdut.Integration
		for _, in := range f.Server.Snapshot().Integrations {
			if in.TeamID == teamID && in.Name == "prod-am" {
				out = append(out, in.Integration)
			}
		}
		return out
	}
	done := false
	for i := 0; i < 40 && !done; i++ {
		_, err := ext().Create(t.Context(), cr)
		done = err == nil
		if n := len(named()); n > 1 {
			t.Fatalf("team %d, attempt %d: %d integrations named prod-am: a read showed the one the lost create made, and another was made beside it", teamID, i, n)
		}
	}
	got := named()
	if !done || len(got) != 1 || meta.GetExternalName(cr) != extclient.FormatID(got[0].ID) {
		t.Fatalf("team %d: done %v, integrations %d, external name %q: want one, recorded", teamID, done, len(got), meta.GetExternalName(cr))
	}
	if v := f.Server.Verify(string(getSecret(t, k).Data[SecretKeyKey])); !v.Valid || v.ID != got[0].ID {
		t.Errorf("team %d: the Secret's key: %+v; want the key of integration %d", teamID, v, got[0].ID)
	}
}

// An Integration deleted after a create whose answer was lost (the POST
// committed, its ID never recorded) deletes the integration that create
// made: let go at once, it would leave a working webhook key that nobody
// holds on the server with no MR.
func TestDeletingAnMRWhoseCreateWasLostDeletesWhatItMade(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	if _, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "staging-am"); err != nil {
		t.Fatal(err)
	}
	cr := integ(teamID)
	k := kube(t, cr.DeepCopy())
	now := controllertest.Now()
	e := onClock(f, k, &now, time.Time{})
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("Create with a lost POST answer: want an error")
	}
	cr.SetDeletionTimestamp(&metav1.Time{Time: now})
	gone := false
	for range 6 {
		now = now.Add(20 * time.Second)
		o, err := e.Observe(t.Context(), cr)
		if err != nil {
			continue
		}
		if gone = !o.ResourceExists; gone {
			break
		}
		if _, err := e.Delete(t.Context(), cr); err != nil {
			t.Fatal(err)
		}
	}
	st := f.Server.Snapshot()
	if !gone || len(st.Integrations) != 1 || st.Integrations[0].Name != "staging-am" {
		t.Errorf("let go %v, integrations %d: want the MR gone, the lost create's integration deleted and the team's other one kept", gone, len(st.Integrations))
	}
}
