package integration

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestImportIsNotLost (review item 8): an Integration imported with
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
	e := &external{api: f.Client, kube: kube(t), record: rec, adopter: generic.Adopter{Record: rec}}
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

// TestOrphanCleanupIsTimeBound (review item 10): an integration of the MR's
// name found long after an interrupted Create marked its Secret may be
// anyone's (one made by hand to unblock senders): it is never deleted.
func TestOrphanCleanupIsTimeBound(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: kube(t), record: rec, adopter: generic.Adopter{Record: rec}, now: func() time.Time { return now }}
	cr := integ(teamID)
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
	if meta.GetExternalName(cr) != generic.FormatID(handMade) {
		t.Errorf("external name %q, want the integration adopted (%d), its missing key reported", meta.GetExternalName(cr), handMade)
	}
}
