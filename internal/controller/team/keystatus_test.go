package team

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// TestAKeyWithoutMintedAtIsRotatedSometime: every team key minted before
// this release has no minted-at in its Secret (State: MintedAt zero).
// observeKey only rotates by interval when MintedAt is set, and only a
// rotation or a 401 re-mint ever writes it: such a key is never rotated,
// however long it lives, and status shows no times.
func TestAKeyWithoutMintedAtIsRotatedSometime(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform")
	k := &keys{held: map[int64]bool{id: true}, state: map[int64]credentials.TeamKeyState{id: {}}}
	cr := team(withID(id))
	later := controllertest.Now().Add(10 * 365 * 24 * time.Hour)
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}, keys: k, now: func() time.Time { return later }}
	o, err := e.Observe(t.Context(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if o.ResourceUpToDate {
		t.Errorf("a key with no recorded minted-at is not due after ten years (status.atProvider.key %+v): it is never rotated", cr.Status.AtProvider.Key)
	}
}

// TestKeyStatusSurvivesARoundTrip: keyRotation.interval "24h0.5s" passes
// the CRD's rule; NextRotationAt then carries 500ms, which the stored
// (seconds) status drops: QuietStatus never finds the status unchanged and
// every poll of the Team sends a status update.
func TestKeyStatusSurvivesARoundTrip(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform")
	minted := controllertest.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	k := &keys{held: map[int64]bool{id: true}, state: map[int64]credentials.TeamKeyState{id: {MintedAt: minted}}}
	cr := team(withID(id))
	cr.Spec.ForProvider.KeyRotation = &v1alpha1.KeyRotation{Interval: &metav1.Duration{Duration: 24*time.Hour + 500*time.Millisecond}}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}, keys: k, now: controllertest.Now}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cr.Status.AtProvider)
	if err != nil {
		t.Fatal(err)
	}
	var stored v1alpha1.TeamObservation
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(cr.Status.AtProvider, stored) {
		t.Errorf("status.atProvider.key differs from its stored copy: nextRotationAt %v, stored %v", cr.Status.AtProvider.Key.NextRotationAt.Time, stored.Key.NextRotationAt.Time)
	}
}
