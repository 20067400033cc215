//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestCommittedPostAnswered504 (review item 3): the server commits a POST
// and answers 504. The retry must find what it made, not read the list
// from before the POST out of the shared answers and make a second one.
func TestCommittedPostAnswered504(t *testing.T) {
	ns := "e2e-commit-504"
	namespace(t, ns, nil)
	apply(t, teamYAML(ns, "web", "Commit 504"))
	team := &v1alpha1.Team{ObjectMeta: om(ns, "web")}
	teamID := externalID(t, ready(t, team))

	scenariof(t, "a switch and an integration whose POSTs the server commits and answers 504 -> one of each, Ready, the key in the Secret accepted")
	before := counters(t)
	for _, route := range []string{"/api/teams/{id}/deadman/switches", "/api/teams/{id}/integrations"} {
		fault(t, terdutdouble.Fault{Method: http.MethodPost, Route: route, Commit: true, Status: http.StatusGatewayTimeout, Times: 1})
	}
	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: watchdog, namespace: %[1]s}
spec:
  forProvider: {teamIdRef: {name: web}, name: commit-504-watchdog, matcher: alertname=Watchdog, timeout: 15m}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: am, namespace: %[1]s}
spec:
  forProvider: {teamIdRef: {name: web}, name: commit-504-am}
  writeConnectionSecretToRef: {name: am-webhook}
`, ns))
	sw := &v1alpha1.DeadmanSwitch{ObjectMeta: om(ns, "watchdog")}
	in := &v1alpha1.Integration{ObjectMeta: om(ns, "am")}
	ready(t, sw)
	ready(t, in)
	time.Sleep(5 * time.Second) // a retry that would duplicate has had its chance
	clearFaults(t)
	after := counters(t)
	switches, integrations := 0, 0
	st := state(t)
	for _, s := range st.Switches {
		if s.TeamID == teamID && s.Name == "commit-504-watchdog" {
			switches++
		}
	}
	for _, i := range st.Integrations {
		if i.TeamID == teamID && i.Name == "commit-504-am" {
			integrations++
		}
	}
	accepted := webhookKeyAccepted(t, in)
	fmt.Printf("    committed POSTs answered 504: switch POSTs %d, integration POSTs %d, integration DELETEs %d; on the server: %d switch, %d integration (external names %s, %s); key in the Secret accepted: %t\n",
		after["POST /api/teams/{id}/deadman/switches"]-before["POST /api/teams/{id}/deadman/switches"],
		after["POST /api/teams/{id}/integrations"]-before["POST /api/teams/{id}/integrations"],
		after["DELETE /api/teams/{id}/integrations/{iid}"]-before["DELETE /api/teams/{id}/integrations/{iid}"],
		switches, integrations, meta.GetExternalName(sw), meta.GetExternalName(in), accepted)
	if switches != 1 || integrations != 1 {
		t.Errorf("%d switches and %d integrations on the server, want one of each", switches, integrations)
	}
	if !accepted {
		t.Error("the integration's Secret holds no key the server accepts")
	}
	deleteAndWait(t, in)
	deleteAndWait(t, sw)
	deleteAndWait(t, team)
}
