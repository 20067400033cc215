//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// restartProvider restarts the provider with the suite's flags plus extra.
func restartProvider(t *testing.T, extra ...string) {
	t.Helper()
	env.stack.StopProvider()
	if err := env.stack.StartProvider(context.Background(), extra...); err != nil {
		t.Fatal(err)
	}
}

// TestConsentIsWatched: with a poll of ten minutes, a revocation can only
// take effect in seconds because consent is watched: a Namespace's labels
// and a ClusterProviderConfig's allowedNamespaces re-queue the MRs they
// concern.
func TestConsentIsWatched(t *testing.T) {
	scenariof(t, "consent is watched: with --poll=10m, unlabelling a namespace or narrowing allowedNamespaces refuses its MRs within seconds")
	restartProvider(t, "--poll=10m")
	defer restartProvider(t)
	namespace(t, "watch-a", nil)
	namespace(t, "watch-b", map[string]string{})
	apply(t, teamYAML("watch-a", "w", "Watched A"))
	a := &v1alpha1.Team{ObjectMeta: om("watch-a", "w")}
	ready(t, a)

	start := time.Now()
	setLabel(t, "watch-a", "terdut.ryuvia.com/allowed-server", "")
	condition(t, a, xpv2.TypeReady, corev1.ConditionFalse, "RefNotPermitted")
	revoked := time.Since(start)
	start = time.Now()
	setLabel(t, "watch-a", "terdut.ryuvia.com/allowed-server", "default")
	ready(t, a)
	readmitted := time.Since(start)

	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ClusterProviderConfig
metadata: {name: watched}
spec:
  endpoint: %s
  credentials: {source: Secret, secretRef: {namespace: crossplane-system, name: terdut-instance-credentials, key: token}}
  allowedNamespaces: {from: All}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: w, namespace: watch-b}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: watched}
  forProvider: {displayName: "Watched B"}
`, env.doubleURL))
	b := &v1alpha1.Team{ObjectMeta: om("watch-b", "w")}
	ready(t, b)
	start = time.Now()
	if _, err := kubectlOut(nil, "patch", "clusterproviderconfig", "watched", "--type=merge", "-p", `{"spec":{"allowedNamespaces":{"from":"None"}}}`); err != nil {
		t.Fatal(err)
	}
	condition(t, b, xpv2.TypeReady, corev1.ConditionFalse, "RefNotPermitted")
	narrowed := time.Since(start)
	fmt.Printf("    with a 10 m poll: revoked by a namespace label in %.1fs, re-admitted in %.1fs, revoked by allowedNamespaces in %.1fs\n", revoked.Seconds(), readmitted.Seconds(), narrowed.Seconds())
	for what, d := range map[string]time.Duration{"label revocation": revoked, "re-admission": readmitted, "allowedNamespaces revocation": narrowed} {
		if d > 15*time.Second {
			t.Errorf("%s took %s: consent is not watched", what, d)
		}
	}
	deleteAndWait(t, a)
	deleteAndWait(t, b)
	if _, err := kubectlOut(nil, "delete", "clusterproviderconfig", "watched"); err != nil {
		t.Error(err)
	}
}

// TestFaultStorm: for 30 s the double answers at random 5xx (15%), 429 with
// Retry-After (5%), timeouts (5%) and added latency (30%), and states a
// limit of 20 requests a second, while MRs are created, updated and
// deleted. Afterwards: no duplicates, no server object deleted that the
// spec did not delete, every MR Ready for its new spec within two minutes,
// and the provider's requests at or below the stated limit (at most 2% of
// them answered 429).
func TestFaultStorm(t *testing.T) {
	const limit, storm = 20, 30 * time.Second
	scenariof(t, "a %s fault storm (5xx 15%%, 429 5%%, timeouts 5%%, +200 ms 30%%; limit %d/s) while MRs are created, updated and deleted", storm, limit)
	namespace(t, "storm-1", nil)
	namespace(t, "storm-2", nil)
	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ClusterProviderConfig
metadata: {name: storm}
spec:
  endpoint: %s
  credentials: {source: Secret, secretRef: {namespace: crossplane-system, name: terdut-instance-credentials, key: token}}
  requestTimeout: 2s
  allowedNamespaces: {from: All}
`, env.doubleURL))
	kept := fleet{ns: "storm-1", teams: 4, pc: "storm"}
	added := fleet{ns: "storm-2", teams: 4, pc: "storm"}
	apply(t, kept.yaml())
	if _, left := waitFleet(t, kept, 120*time.Second); len(left) > 0 {
		t.Fatalf("before the storm: %v", left)
	}
	st := state(t)
	before := count(t, &st, kept)

	must(t, admin(http.MethodPut, "/admin/rate-limit", terdutdouble.RateLimit{RPS: limit, RetryAfter: 1}, nil), "state a rate limit")
	time.Sleep(3 * time.Second) // the provider learns the limit from its next answers
	must(t, admin(http.MethodDelete, "/admin/counters", nil, nil), "reset the counters")
	for _, f := range []terdutdouble.Fault{
		{Status: http.StatusBadGateway, Probability: 0.15},
		{Status: http.StatusServiceUnavailable, Probability: 0.05},
		{Status: http.StatusTooManyRequests, RetryAfter: 1, Probability: 0.05},
		{Delay: terdutdouble.Duration(3 * time.Second), Probability: 0.05},
		{Delay: terdutdouble.Duration(200 * time.Millisecond), Probability: 0.3},
	} {
		f.For = terdutdouble.Duration(storm)
		fault(t, f)
	}
	began := time.Now()
	apply(t, added.yaml())
	// Updates of every kept MR (so that none is Ready by a reconcile from
	// before the storm): every team's name, every policy's repeat count,
	// every switch's timeout, every integration's name.
	changed := kept
	changed.kinds = nil
	y := changed.yaml()
	y = replaceAll(y, "timeout: 15m", "timeout: 20m", "timeout: 26h", "timeout: 27h", "name: am}", "name: am-renamed}",
		"repeatCount: 1", "repeatCount: 2", `displayName: "storm-1 team`, `displayName: "storm-1 renamed team`)
	apply(t, y)
	if _, err := kubectlOut(nil, "-n", kept.ns, "delete", "team/t3", "escalationpolicy/t3", "deadmanswitch/t3-watchdog", "deadmanswitch/t3-backup", "integration/t3-am", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(began.Add(storm)))
	rate := terdutdouble.RateStats{}
	must(t, admin(http.MethodGet, "/admin/rate", nil, &rate), "read the request rate")
	clearFaults(t)
	must(t, admin(http.MethodPut, "/admin/rate-limit", terdutdouble.RateLimit{}, nil), "lift the rate limit")

	end := time.Now()
	_, leftAdded := waitFleet(t, added, 120*time.Second)
	kept.teams = 3
	_, leftKept := waitFleet(t, kept, 120*time.Second)
	after := time.Since(end)
	var stale []string
	updated := waitFor(60*time.Second, func() bool {
		stale = notUpdated(state(t), kept)
		return len(stale) == 0
	})
	st = state(t)
	ca, ck := count(t, &st, added), count(t, &st, kept)
	deletedBySpec := []string{"Team storm-1/t3", "EscalationPolicy storm-1/t3", "DeadmanSwitch storm-1/t3-watchdog", "DeadmanSwitch storm-1/t3-backup", "Integration storm-1/t3-am"}
	var lostIDs []string
	for mr, id := range before.ids {
		if now, ok := ck.ids[mr]; !ok && !contains(deletedBySpec, mr) {
			lostIDs = append(lostIDs, mr+" is gone")
		} else if ok && now != id {
			lostIDs = append(lostIDs, fmt.Sprintf("%s: %s -> %s", mr, id, now))
		}
	}
	leftover := append(leftOnServerNamed(t, "storm-1 team 3"), leftOnServerNamed(t, "storm-1 renamed team 3")...)
	fmt.Printf("    storm: %d requests in %s, %d answered 429 by the limit; at most %d in one second against the stated %d/s\n", rate.Requests, storm, rate.Throttled, rate.MaxPerSecond, rate.Limit)
	fmt.Printf("    after the storm: all Ready in %.1fs; duplicates %d; server objects deleted or replaced that the spec did not delete %d; deleted team left on the server %d; updates applied %v\n",
		after.Seconds(), ca.duplicates+ck.duplicates, len(lostIDs)+len(ca.missing)+len(ck.missing), len(leftover), updated)
	if len(leftAdded)+len(leftKept) > 0 {
		t.Errorf("not Ready two minutes after the storm: %v %v", leftAdded, leftKept)
	}
	if ca.duplicates+ck.duplicates > 0 || len(lostIDs)+len(ca.missing)+len(ck.missing) > 0 || len(leftover) > 0 || !updated {
		t.Errorf("duplicates %d, lost %v %v %v, left %v, not updated %v", ca.duplicates+ck.duplicates, lostIDs, ca.missing, ck.missing, leftover, stale)
	}
	if rate.Throttled > rate.Requests/50 {
		t.Errorf("%d of %d requests were answered 429 by the stated limit: the provider does not pace itself by RateLimit-Policy", rate.Throttled, rate.Requests)
	}
	if rate.MaxPerSecond > limit {
		t.Errorf("the provider sent %d requests in one second, above the stated limit of %d", rate.MaxPerSecond, limit)
	}
	for _, ns := range []string{"storm-1", "storm-2"} {
		if _, err := kubectlOut(nil, "-n", ns, "delete", "team,escalationpolicy,deadmanswitch,integration", "--all", "--wait=false"); err != nil {
			t.Error(err)
		}
	}
	for _, ns := range []string{"storm-1", "storm-2"} {
		if left := waitGone(t, ns, 120*time.Second); len(left) > 0 {
			t.Errorf("left in %s: %v", ns, left)
		}
	}
	if _, err := kubectlOut(nil, "delete", "clusterproviderconfig", "storm"); err != nil {
		t.Error(err)
	}
}

// notUpdated lists what of a fleet's teams (storm-1 once t3 is deleted) the server does not hold as updated: the teams renamed, their
// policies repeated twice, the switches' new timeouts, the integrations
// renamed.
func notUpdated(s terdutdouble.State, f fleet) []string {
	var out []string
	teams := 0
	for _, tm := range s.Teams {
		if !strings.HasPrefix(tm.Name, f.ns+" ") {
			continue
		}
		teams++
		if !strings.HasPrefix(tm.Name, f.ns+" renamed team ") {
			out = append(out, fmt.Sprintf("team %q not renamed", tm.Name))
		}
		if p := s.Policies[tm.ID]; p.RepeatCount != 2 {
			out = append(out, fmt.Sprintf("team %q: policy repeats %d", tm.Name, p.RepeatCount))
		}
		want := map[string]time.Duration{"watchdog": 20 * time.Minute, "backup": 27 * time.Hour}
		for _, sw := range s.Switches {
			if d, err := time.ParseDuration(sw.Timeout); sw.TeamID == tm.ID && (err != nil || d != want[sw.Name]) {
				out = append(out, fmt.Sprintf("team %q: switch %s timeout %s", tm.Name, sw.Name, sw.Timeout))
			}
		}
		for _, in := range s.Integrations {
			if in.TeamID == tm.ID && in.Name != "am-renamed" {
				out = append(out, fmt.Sprintf("team %q: integration %q", tm.Name, in.Name))
			}
		}
	}
	if teams != f.teams {
		out = append(out, fmt.Sprintf("%d teams of %s, want %d", teams, f.ns, f.teams))
	}
	return out
}

func replaceAll(s string, oldNew ...string) string {
	return strings.NewReplacer(oldNew...).Replace(s)
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// leftOnServerNamed lists the teams of that name still on the server.
func leftOnServerNamed(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, tm := range state(t).Teams {
		if tm.Name == name {
			out = append(out, fmt.Sprintf("team %d %q", tm.ID, tm.Name))
		}
	}
	return out
}
