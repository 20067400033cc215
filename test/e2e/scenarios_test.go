//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func om(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func teamYAML(ns, name, display string) string {
	return fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: %s, namespace: %s}
spec:
  forProvider: {displayName: %q}
`, name, ns, display)
}

func TestTeam(t *testing.T) {
	ns := "e2e-team"
	namespace(t, ns, nil)
	scenariof(t, "apply a Team -> Ready, and the server has it")
	apply(t, teamYAML(ns, "sre", "SRE"))
	cr := &v1alpha1.Team{ObjectMeta: om(ns, "sre")}
	ready(t, cr)
	id := externalID(t, cr)
	if tm, err := env.admin.GetTeam(t.Context(), id); err != nil || tm.Name != "SRE" {
		t.Fatalf("server team %d = %+v, %v; want SRE", id, tm, err)
	}

	scenariof(t, "change spec.forProvider.displayName -> the server team is renamed in place")
	apply(t, teamYAML(ns, "sre", "Site Reliability"))
	eventually(t, 30*time.Second, "rename on the server", func() string {
		tm, err := env.admin.GetTeam(t.Context(), id)
		if err != nil || tm.Name != "Site Reliability" {
			return fmt.Sprintf("%+v %v", tm, err)
		}
		return ""
	})

	scenariof(t, "rename the team directly on the server -> reverted at the next poll")
	if err := env.admin.RenameTeam(t.Context(), id, "changed by hand"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "drift reverted", func() string {
		tm, _ := env.admin.GetTeam(t.Context(), id)
		if tm.Name != "Site Reliability" {
			return "server name is " + tm.Name
		}
		return ""
	})

	scenariof(t, "delete the Team -> gone on the server, finalizer removed")
	deleteAndWait(t, cr)
	if _, err := env.admin.GetTeam(t.Context(), id); !terdut.IsNotFound(err) {
		t.Fatalf("server team after delete: %v, want 404", err)
	}
}

func TestEscalationPolicy(t *testing.T) {
	ns := "e2e-policy"
	namespace(t, ns, nil)
	apply(t, teamYAML(ns, "ops", "Ops"))
	team := &v1alpha1.Team{ObjectMeta: om(ns, "ops")}
	teamID := externalID(t, ready(t, team))
	policy := func(repeat int) string {
		return fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: ops, namespace: %s}
spec:
  forProvider:
    teamIdRef: {name: ops}
    repeatCount: %d
    levels:
    - timeout: 5m
      targets: [{kind: oncall}, {kind: user, username: alice}]
`, ns, repeat)
	}
	scenariof(t, "apply an EscalationPolicy referencing the Team -> Ready, usernames resolved")
	apply(t, policy(1))
	cr := &v1alpha1.EscalationPolicy{ObjectMeta: om(ns, "ops")}
	ready(t, cr)
	if len(cr.Status.AtProvider.ResolvedUsers) != 1 || cr.Status.AtProvider.ResolvedUsers[0].Username != "alice" {
		t.Fatalf("resolved users = %+v, want alice", cr.Status.AtProvider.ResolvedUsers)
	}

	scenariof(t, "change repeatCount -> the whole policy is PUT")
	apply(t, policy(3))
	serverRepeat := func(want int64) func() string {
		return func() string {
			p, err := env.admin.GetEscalationPolicy(t.Context(), teamID)
			if err != nil || p.RepeatCount != want {
				return fmt.Sprintf("%+v %v", p, err)
			}
			return ""
		}
	}
	eventually(t, 30*time.Second, "repeat count on the server", serverRepeat(3))

	scenariof(t, "change the policy on the server -> reverted at the next poll")
	p, err := env.admin.GetEscalationPolicy(t.Context(), teamID)
	must(t, err, "read the policy to tamper with it")
	p.RepeatCount = 9
	must(t, env.admin.PutEscalationPolicy(t.Context(), teamID, *p), "tamper with the policy on the server")
	eventually(t, 30*time.Second, "drift reverted", serverRepeat(3))

	scenariof(t, "an unknown username -> Ready=False UnknownUser naming it")
	apply(t, strings.Replace(policy(3), "username: alice", "username: nobody", 1))
	condition(t, cr, xpv2.TypeReady, corev1.ConditionFalse, "UnknownUser")
	if !strings.Contains(cr.GetCondition(xpv2.TypeReady).Message, "nobody") {
		t.Fatalf("message %q does not name the user", cr.GetCondition(xpv2.TypeReady).Message)
	}

	scenariof(t, "delete the EscalationPolicy -> the server policy is emptied")
	deleteAndWait(t, cr)
	if p, err := env.admin.GetEscalationPolicy(t.Context(), teamID); err != nil || !p.IsEmpty() {
		t.Fatalf("policy after delete = %+v, want empty", p)
	}
	deleteAndWait(t, team)
}

func TestDeadmanSwitch(t *testing.T) {
	ns := "e2e-switch"
	namespace(t, ns, nil)
	apply(t, teamYAML(ns, "db", "Databases"))
	team := &v1alpha1.Team{ObjectMeta: om(ns, "db")}
	teamID := externalID(t, ready(t, team))
	sw := func(timeout string) string {
		return fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: watchdog, namespace: %s}
spec:
  forProvider:
    teamIdRef: {name: db}
    matcher: alertname=Watchdog,cluster=prod
    timeout: %s
`, ns, timeout)
	}
	scenariof(t, "apply a DeadmanSwitch without a name -> Ready, named by the server from its matcher")
	apply(t, sw("15m"))
	cr := &v1alpha1.DeadmanSwitch{ObjectMeta: om(ns, "watchdog")}
	ready(t, cr)
	id := externalID(t, cr)
	if cr.Status.AtProvider.Name != "alertname=Watchdog,cluster=prod" {
		t.Fatalf("server-derived name in status = %q", cr.Status.AtProvider.Name)
	}
	serverTimeout := func(want string) func() string {
		return func() string {
			list, _ := env.admin.ListDeadmanSwitches(t.Context(), teamID)
			for _, s := range list {
				if s.ID == id && s.Timeout == want {
					return ""
				}
			}
			return fmt.Sprintf("switches %+v", list)
		}
	}
	scenariof(t, "change the timeout -> the switch is updated in place (same ID)")
	apply(t, sw("30m"))
	eventually(t, 30*time.Second, "timeout on the server", serverTimeout("30m"))

	scenariof(t, "change the switch on the server -> reverted at the next poll")
	must(t, env.admin.UpdateDeadmanSwitch(t.Context(), teamID, id, terdut.DeadmanSwitch{Matcher: "alertname=Other", Timeout: "1h", Severity: "info"}), "tamper with the switch on the server")
	eventually(t, 30*time.Second, "drift reverted", serverTimeout("30m"))

	scenariof(t, "delete the DeadmanSwitch -> gone on the server")
	deleteAndWait(t, cr)
	if list, err := env.admin.ListDeadmanSwitches(t.Context(), teamID); err != nil || len(list) != 0 {
		t.Fatalf("switches after delete = %+v", list)
	}
	deleteAndWait(t, team)
}

func TestIntegration(t *testing.T) {
	ns := "e2e-integration"
	namespace(t, ns, nil)
	apply(t, teamYAML(ns, "web", "Web"))
	team := &v1alpha1.Team{ObjectMeta: om(ns, "web")}
	teamID := externalID(t, ready(t, team))
	in := func(name string) string {
		return fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: am, namespace: %s}
spec:
  forProvider: {teamIdRef: {name: web}, kind: alertmanager, name: %s}
  writeConnectionSecretToRef: {name: am-webhook}
`, ns, name)
	}
	scenariof(t, "apply an Integration -> Ready; its connection Secret holds url and key")
	apply(t, in("prod-am"))
	cr := &v1alpha1.Integration{ObjectMeta: om(ns, "am")}
	ready(t, cr)
	id := externalID(t, cr)
	sec := &corev1.Secret{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "am-webhook"}, sec); err != nil {
		t.Fatal(err)
	}
	var issued []string
	must(t, admin(http.MethodGet, "/admin/issued", nil, &issued), "read the secrets the double issued")
	if !slices.Contains(issued, string(sec.Data["url"])) || !slices.Contains(issued, string(sec.Data["key"])) {
		t.Fatalf("connection Secret keys %v do not hold the url and key the server issued", keys(sec.Data))
	}
	notInTheMR(t, ns, "integration/am", sec)

	scenariof(t, "rename -> PATCH in place; the key does not change")
	before := counters(t)
	apply(t, in("prod-am-2"))
	eventually(t, 30*time.Second, "rename on the server", func() string {
		for _, i := range state(t).Integrations {
			if i.ID == id && i.Name == "prod-am-2" {
				return ""
			}
		}
		return "not renamed"
	})
	ready(t, cr)
	renamed := &corev1.Secret{}
	must(t, env.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "am-webhook"}, renamed), "read the connection Secret")
	after := counters(t)
	notInTheMR(t, ns, "integration/am", renamed)
	patches, posts := after["PATCH /api/teams/{id}/integrations/{iid}"]-before["PATCH /api/teams/{id}/integrations/{iid}"], after["POST /api/teams/{id}/integrations"]-before["POST /api/teams/{id}/integrations"]
	if patches < 1 || posts != 0 || externalID(t, cr) != id || !bytes.Equal(renamed.Data["key"], sec.Data["key"]) || !webhookKeyAccepted(t, cr) {
		t.Fatalf("a rename: %d PATCHes, %d POSTs, external name %s (was %d), key unchanged %t, accepted %t; want a PATCH in place with the same key",
			patches, posts, meta.GetExternalName(cr), id, bytes.Equal(renamed.Data["key"], sec.Data["key"]), webhookKeyAccepted(t, cr))
	}

	scenariof(t, "rename on the server -> reverted at the next poll")
	must(t, env.admin.RenameIntegration(t.Context(), teamID, id, "by-hand"), "tamper with the integration on the server")
	eventually(t, 30*time.Second, "drift reverted", func() string {
		for _, i := range state(t).Integrations {
			if i.ID == id && i.Name == "prod-am-2" {
				return ""
			}
		}
		return "not reverted"
	})

	scenariof(t, "delete the connection Secret -> WebhookSecretLost, and no new key minted")
	posts = counters(t)["POST /api/teams/{id}/integrations"]
	if err := env.kube.Delete(t.Context(), sec); err != nil {
		t.Fatal(err)
	}
	condition(t, cr, xpv2.TypeReady, corev1.ConditionFalse, "WebhookSecretLost")
	polled(t, fmt.Sprintf("/api/teams/%d/integrations", teamID), 2) // two more polls
	n := counters(t)["POST /api/teams/{id}/integrations"]
	fmt.Printf("    integration POSTs before and after the loss: %d, %d\n", posts, n)
	if n != posts {
		t.Fatalf("%d integration POSTs after the Secret was lost, want %d: a key was minted silently", n, posts)
	}
	if got := len(state(t).Integrations); got != 1 {
		t.Fatalf("%d integrations on the server, want the one", got)
	}

	scenariof(t, "delete the Integration -> gone on the server")
	deleteAndWait(t, cr)
	if got := len(state(t).Integrations); got != 0 {
		t.Fatalf("%d integrations after delete", got)
	}
	deleteAndWait(t, team)
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestObserveOnlyImport(t *testing.T) {
	ns := "e2e-import"
	namespace(t, ns, nil)
	tm, err := env.admin.CreateTeam(t.Context(), "Legacy")
	if err != nil {
		t.Fatal(err)
	}
	scenariof(t, "import team %d made on the server with managementPolicies [Observe] -> Ready, never written", tm.ID)
	before := counters(t)
	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata:
  name: legacy
  namespace: %s
  annotations: {crossplane.io/external-name: "%d"}
spec:
  managementPolicies: [Observe]
  forProvider: {displayName: "A different name"}
`, ns, tm.ID))
	cr := &v1alpha1.Team{ObjectMeta: om(ns, "legacy")}
	ready(t, cr)
	if cr.Status.AtProvider.DisplayName != "Legacy" || cr.Status.AtProvider.ID != tm.ID {
		t.Fatalf("atProvider = %+v, want the server's team", cr.Status.AtProvider)
	}
	polled(t, "/api/teams", 2) // two more polls
	after := counters(t)
	for _, k := range []string{"PUT /api/teams/{id}", "POST /api/teams", "DELETE /api/teams/{id}"} {
		if after[k] != before[k] {
			t.Fatalf("%s called %d times for an Observe-only MR", k, after[k]-before[k])
		}
	}
	scenariof(t, "delete the Observe-only Team -> the server team stays")
	deleteAndWait(t, cr)
	if _, err := env.admin.GetTeam(t.Context(), tm.ID); err != nil {
		t.Fatalf("server team after deleting an Observe-only MR: %v", err)
	}
}

func TestCrashSafety(t *testing.T) {
	ns := "e2e-crash"
	namespace(t, ns, nil)
	scenariof(t, "kill the provider (SIGKILL) right after the server committed a POST, restart it -> one team, Ready")
	fault(t, terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams", Commit: true, Delay: terdutdouble.Duration(time.Minute), Times: 1})
	before := counters(t)["POST /api/teams"]
	apply(t, teamYAML(ns, "crash", "Crash Test"))
	eventually(t, 30*time.Second, "the held POST", func() string {
		if counters(t)["POST /api/teams"] > before {
			return ""
		}
		return "no POST yet"
	})
	killProvider()
	clearFaults(t)
	if err := startProvider(); err != nil {
		t.Fatal(err)
	}
	cr := &v1alpha1.Team{ObjectMeta: om(ns, "crash")}
	ready(t, cr)
	n := 0
	for _, tm := range state(t).Teams {
		if tm.Name == "Crash Test" {
			n++
		}
	}
	fmt.Printf("    crash safety: server-side teams named %q: %d (external-name %s)\n", "Crash Test", n, meta.GetExternalName(cr))
	if n != 1 {
		t.Fatalf("%d teams on the server, want exactly 1", n)
	}
	deleteAndWait(t, cr)
}

// notInTheMR fails when the url or key of Secret sec appears anywhere in
// the object what (kind/name) in namespace ns, its status included, or in
// an event about it. It never prints them.
func notInTheMR(t *testing.T, ns, what string, sec *corev1.Secret) {
	t.Helper()
	obj, err := kubectlOut(nil, "-n", ns, "get", what, "-o", "json")
	if err != nil {
		t.Fatalf("read %s: %v", what, err)
	}
	name := what[strings.Index(what, "/")+1:]
	events, err := kubectlOut(nil, "-n", ns, "get", "events", "--field-selector", "involvedObject.name="+name, "-o", "json")
	if err != nil {
		t.Fatalf("read the events of %s: %v", what, err)
	}
	for _, k := range []string{"url", "key"} {
		v := string(sec.Data[k])
		if v == "" {
			t.Fatalf("Secret %s has no %s", sec.Name, k)
		}
		if strings.Contains(obj, v) || strings.Contains(events, v) {
			t.Errorf("the webhook %s of Secret %s appears in %s or its events", k, sec.Name, what)
		}
	}
}
