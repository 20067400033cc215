//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestCommittedPostAnswered504: the server commits a POST
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
	// Two more polls of each list: a retry that would duplicate has had its
	// chance.
	polled(t, fmt.Sprintf("/api/teams/%d/deadman/switches", teamID), 2)
	polled(t, fmt.Sprintf("/api/teams/%d/integrations", teamID), 2)
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
	n := func(route string) int { return after[route] - before[route] }
	swPosts, swDeletes := n("POST /api/teams/{id}/deadman/switches"), n("DELETE /api/teams/{id}/deadman/switches/{sid}")
	inPosts, inDeletes := n("POST /api/teams/{id}/integrations"), n("DELETE /api/teams/{id}/integrations/{iid}")
	fmt.Printf("    committed POSTs answered 504: switch POSTs %d, DELETEs %d; integration POSTs %d, DELETEs %d; on the server: %d switch, %d integration (external names %s, %s); key in the Secret accepted: %t\n",
		swPosts, swDeletes, inPosts, inDeletes, switches, integrations, meta.GetExternalName(sw), meta.GetExternalName(in), accepted)
	if switches != 1 || integrations != 1 {
		t.Errorf("%d switches and %d integrations on the server, want one of each", switches, integrations)
	}
	// The switch the 504 committed is the one kept: one POST, no DELETE. The
	// integration's key was only in the lost answer, so exactly that one is
	// replaced: a second POST and one DELETE.
	if swPosts != 1 || swDeletes != 0 || inPosts != 2 || inDeletes != 1 {
		t.Errorf("switch POSTs %d DELETEs %d, integration POSTs %d DELETEs %d; want 1/0 and 2/1: the retry did not find what it made", swPosts, swDeletes, inPosts, inDeletes)
	}
	if !accepted {
		t.Error("the integration's Secret holds no key the server accepts")
	}
	deleteAndWait(t, in)
	deleteAndWait(t, sw)
	deleteAndWait(t, team)
}

// TestALyingList (issue 20): the server's lists omit objects that exist:
// three `200 []` answers to each of a team's lists, then lists that lag 30 s
// behind every create. No second object, no new key, no orphan.
func TestALyingList(t *testing.T) {
	ns := "e2e-lying-list"
	namespace(t, ns, nil)
	children := func(suffix string) string {
		return fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: watchdog%[2]s, namespace: %[1]s}
spec:
  forProvider: {teamIdRef: {name: web}, name: lying-watchdog%[2]s, matcher: alertname=Watchdog, timeout: 15m}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: am%[2]s, namespace: %[1]s}
spec:
  forProvider: {teamIdRef: {name: web}, name: lying-am%[2]s}
  writeConnectionSecretToRef: {name: am%[2]s-webhook}
`, ns, suffix)
	}
	apply(t, teamYAML(ns, "web", "Lying List")+"---\n"+children(""))
	teamID := externalID(t, ready(t, &v1alpha1.Team{ObjectMeta: om(ns, "web")}))
	sw := &v1alpha1.DeadmanSwitch{ObjectMeta: om(ns, "watchdog")}
	in := &v1alpha1.Integration{ObjectMeta: om(ns, "am")}
	swID, inID := externalID(t, ready(t, sw)), externalID(t, ready(t, in))
	eventually(t, 30*time.Second, "status.observedGeneration = metadata.generation (issue 20)", func() string {
		get(t, sw)
		if sw.GetObservedGeneration() != sw.GetGeneration() || sw.GetGeneration() == 0 {
			return fmt.Sprintf("observedGeneration %d, generation %d", sw.GetObservedGeneration(), sw.GetGeneration())
		}
		return ""
	})
	count := func(names ...string) (objects, orphans int) {
		st := state(t)
		held := map[string]bool{}
		for _, n := range names {
			held[n] = true
		}
		for _, s := range st.Switches {
			if s.TeamID == teamID {
				objects++
			}
		}
		for _, i := range st.Integrations {
			if i.TeamID == teamID {
				objects++
				if !held[i.Name] {
					orphans++
				}
			}
		}
		return objects, orphans
	}

	scenariof(t, "three 200 [] answers to each of the team's lists -> no new object, no new key")
	before := counters(t)
	for _, route := range []string{"/api/teams/{id}/deadman/switches", "/api/teams/{id}/integrations"} {
		fault(t, terdutdouble.Fault{Method: http.MethodGet, Route: route, Status: http.StatusOK, Body: "[]", Times: 3})
	}
	eventually(t, 60*time.Second, "the six lying answers given", func() string {
		c := counters(t)
		got := c["GET /api/teams/{id}/deadman/switches"] - before["GET /api/teams/{id}/deadman/switches"] +
			c["GET /api/teams/{id}/integrations"] - before["GET /api/teams/{id}/integrations"]
		if got < 8 {
			return fmt.Sprintf("%d list requests since the faults", got)
		}
		return ""
	})
	polled(t, fmt.Sprintf("/api/teams/%d/deadman/switches", teamID), 3)
	polled(t, fmt.Sprintf("/api/teams/%d/integrations", teamID), 3)
	clearFaults(t)
	after := counters(t)
	objects, orphans := count("lying-am")
	newObjects := after["POST /api/teams/{id}/deadman/switches"] - before["POST /api/teams/{id}/deadman/switches"] +
		after["POST /api/teams/{id}/integrations"] - before["POST /api/teams/{id}/integrations"]
	sameIDs := externalID(t, get(t, sw)) == swID && externalID(t, get(t, in)) == inID
	fmt.Printf("    lying list: %d empty answers given; new objects %d, objects on the team %d, same IDs %t, key in the Secret accepted %t, orphans %d\n",
		6, newObjects, objects, sameIDs, webhookKeyAccepted(t, in), orphans)
	if newObjects != 0 || objects != 2 || !sameIDs || orphans != 0 || !webhookKeyAccepted(t, in) {
		t.Errorf("a lying list made %d new objects (%d on the team, same IDs %t, %d orphans)", newObjects, objects, sameIDs, orphans)
	}

	scenariof(t, "three 200 [] answers to the list of teams while the Team's display name changes -> the same team renamed, no second team, the children unmoved")
	before = counters(t)
	fault(t, terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams", Status: http.StatusOK, Body: "[]", Times: 3})
	apply(t, teamYAML(ns, "web", "Lying List Renamed"))
	eventually(t, 60*time.Second, "the three lying answers given and the team renamed on the server", func() string {
		lies := counters(t)["GET /api/teams"] - before["GET /api/teams"]
		tm, err := env.admin.ReadTeam(t.Context(), teamID)
		if err != nil {
			return err.Error()
		}
		if lies < 3 || tm.Name != "Lying List Renamed" {
			return fmt.Sprintf("%d lists of teams since the fault; team %d is named %q", lies, teamID, tm.Name)
		}
		return ""
	})
	clearFaults(t)
	polled(t, "/api/teams", 2) // reconciles after the last lie
	after = counters(t)
	teamsMade := after["POST /api/teams"] - before["POST /api/teams"]
	sameTeam := externalID(t, get(t, &v1alpha1.Team{ObjectMeta: om(ns, "web")})) == teamID
	sameIDs = externalID(t, get(t, sw)) == swID && externalID(t, get(t, in)) == inID
	fmt.Printf("    lying list of teams during a rename: teams made %d, same team %t, children's IDs unchanged %t, key in the Secret accepted %t\n",
		teamsMade, sameTeam, sameIDs, webhookKeyAccepted(t, in))
	if teamsMade != 0 || !sameTeam || !sameIDs || !webhookKeyAccepted(t, in) {
		t.Errorf("a lying list of teams during a rename: %d teams made, same team %t, children unmoved %t", teamsMade, sameTeam, sameIDs)
	}

	scenariof(t, "for 25 s lists reordered and one item short, and objects read as before their update for 20 s, while the switch's timeout and the integration's name change -> the same objects updated, nothing made or deleted")
	before = counters(t)
	must(t, admin(http.MethodPut, "/admin/quirks", terdutdouble.Quirks{Reorder: true, ShortLists: true, Stale: terdutdouble.Duration(20 * time.Second), For: terdutdouble.Duration(25 * time.Second)}, nil), "make the double quirky")
	quirky := time.Now()
	apply(t, replaceAll(children(""), "timeout: 15m", "timeout: 20m", "name: lying-am}", "name: lying-am-renamed}"))
	ready(t, sw)
	ready(t, in)
	time.Sleep(time.Until(quirky.Add(25 * time.Second))) // the quirks' time: what they could do, they have done
	polled(t, fmt.Sprintf("/api/teams/%d/deadman/switches", teamID), 2)
	polled(t, fmt.Sprintf("/api/teams/%d/integrations", teamID), 2)
	after = counters(t)
	made := after["POST /api/teams/{id}/deadman/switches"] - before["POST /api/teams/{id}/deadman/switches"] +
		after["POST /api/teams/{id}/integrations"] - before["POST /api/teams/{id}/integrations"]
	deleted := after["DELETE /api/teams/{id}/deadman/switches/{sid}"] - before["DELETE /api/teams/{id}/deadman/switches/{sid}"] +
		after["DELETE /api/teams/{id}/integrations/{iid}"] - before["DELETE /api/teams/{id}/integrations/{iid}"]
	sameIDs = externalID(t, get(t, sw)) == swID && externalID(t, get(t, in)) == inID
	objects, orphans = count("lying-am-renamed")
	applied := false
	for _, x := range state(t).Switches {
		applied = applied || (x.ID == swID && (x.Timeout == "20m" || x.Timeout == "20m0s"))
	}
	fmt.Printf("    quirky server during updates: made %d, deleted %d, objects on the team %d, same IDs %t, timeout applied %t, orphans %d, key in the Secret accepted %t\n",
		made, deleted, objects, sameIDs, applied, orphans, webhookKeyAccepted(t, in))
	if made != 0 || deleted != 0 || objects != 2 || !sameIDs || !applied || orphans != 0 || !webhookKeyAccepted(t, in) {
		t.Errorf("a quirky server during updates: %d made, %d deleted, %d objects, same IDs %t, applied %t, %d orphans", made, deleted, objects, sameIDs, applied, orphans)
	}

	scenariof(t, "lists that lag 30 s behind every create -> one switch and one integration made, Ready, no second")
	must(t, admin(http.MethodPut, "/admin/not-found-after-create", map[string]string{"duration": "30s"}, nil), "lag the lists")
	defer func() {
		_ = admin(http.MethodPut, "/admin/not-found-after-create", map[string]string{"duration": "0s"}, nil)
	}()
	before = counters(t)
	start := time.Now()
	apply(t, children("-lag"))
	sw2 := &v1alpha1.DeadmanSwitch{ObjectMeta: om(ns, "watchdog-lag")}
	in2 := &v1alpha1.Integration{ObjectMeta: om(ns, "am-lag")}
	ready(t, sw2)
	ready(t, in2)
	took := time.Since(start)
	time.Sleep(time.Until(start.Add(30 * time.Second)))                 // the lag's time
	polled(t, fmt.Sprintf("/api/teams/%d/deadman/switches", teamID), 2) // past the lag: a duplicate would show now
	polled(t, fmt.Sprintf("/api/teams/%d/integrations", teamID), 2)
	after = counters(t)
	objects, orphans = count("lying-am-renamed", "lying-am-lag")
	posts := after["POST /api/teams/{id}/deadman/switches"] - before["POST /api/teams/{id}/deadman/switches"] +
		after["POST /api/teams/{id}/integrations"] - before["POST /api/teams/{id}/integrations"]
	fmt.Printf("    lagging list (30s): Ready in %s; POSTs %d (want 2); objects on the team %d (want 4); key in the Secret accepted %t; orphans %d\n",
		took.Round(time.Second), posts, objects, webhookKeyAccepted(t, in2), orphans)
	if posts != 2 || objects != 4 || orphans != 0 || !webhookKeyAccepted(t, in2) {
		t.Errorf("a lagging list: %d POSTs, %d objects, %d orphans", posts, objects, orphans)
	}
	_ = admin(http.MethodPut, "/admin/not-found-after-create", map[string]string{"duration": "0s"}, nil)
	for _, mg := range []client.Object{in2, sw2, in, sw, &v1alpha1.Team{ObjectMeta: om(ns, "web")}} {
		deleteAndWait(t, mg)
	}
}
