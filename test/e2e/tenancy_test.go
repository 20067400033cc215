//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestTenancy: a fresh server bootstrapped by a ServiceAccount, consent by
// namespace label with live revocation, ownership of teams, team-scoped keys
// for children, and a key rotation without a failed request.
func TestTenancy(t *testing.T) {
	scenariof(t, "a fresh double with no users -> a bootstrap ServiceAccount + a ClusterProviderConfig naming its Secret -> Ready")
	url := freshDouble(t, "fresh")

	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ClusterProviderConfig
metadata: {name: tenancy}
spec:
  endpoint: %s
  credentials:
    source: Secret
    secretRef: {namespace: crossplane-system, name: tenancy-instance-credentials, key: token}
  homeNamespace: team-a
  allowedNamespaces:
    from: Selector
    selector: {matchLabels: {tenancy: allowed}}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: terdut-operator, namespace: crossplane-system}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenancy}
  writeConnectionSecretToRef: {name: tenancy-instance-credentials}
  forProvider:
    name: terdut-operator
    scope: instance
    bootstrap: {username: admin}
`, url))
	sa := &v1alpha1.ServiceAccount{ObjectMeta: om("crossplane-system", "terdut-operator")}
	ready(t, sa)
	var counts map[string]int
	_ = adminAt(url, http.MethodGet, "/admin/counters", nil, &counts)
	if counts["POST /api/bootstrap"] != 1 {
		t.Fatalf("/api/bootstrap called %d times, want 1", counts["POST /api/bootstrap"])
	}
	checkpoint := &corev1.Secret{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: "terdut-operator-bootstrap-admin"}, checkpoint); err == nil {
		t.Fatal("the bootstrap checkpoint (an admin key) is left behind")
	}

	teamYAML := func(ns string) string {
		return fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: oncall, namespace: %s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenancy}
  forProvider: {displayName: "Team %s"}
`, ns, ns)
	}
	scenariof(t, "a Team in the home namespace team-a -> Ready")
	namespace(t, "team-a", map[string]string{})
	apply(t, teamYAML("team-a"))
	teamA := &v1alpha1.Team{ObjectMeta: om("team-a", "oncall")}
	teamAID := externalID(t, ready(t, teamA))

	scenariof(t, "a Team in team-b is refused (RefNotPermitted) until team-b gets the selector's label")
	namespace(t, "team-b", map[string]string{})
	apply(t, teamYAML("team-b"))
	teamB := &v1alpha1.Team{ObjectMeta: om("team-b", "oncall")}
	condition(t, teamB, xpv2.TypeReady, corev1.ConditionFalse, "RefNotPermitted")
	if msg := teamB.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, `ClusterProviderConfig "tenancy"`) || !strings.Contains(msg, `"team-b"`) {
		t.Fatalf("RefNotPermitted message %q does not name the provider config and the namespace", msg)
	}
	label := func(v string) {
		ns := &corev1.Namespace{}
		_ = env.kube.Get(t.Context(), types.NamespacedName{Name: "team-b"}, ns)
		if v == "" {
			delete(ns.Labels, "tenancy")
		} else {
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels["tenancy"] = v
		}
		if err := env.kube.Update(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	label("allowed")
	teamBID := externalID(t, ready(t, teamB))

	scenariof(t, "removing the label flips team-b's Team to RefNotPermitted; its server team stays")
	label("")
	condition(t, teamB, xpv2.TypeReady, corev1.ConditionFalse, "RefNotPermitted")
	admin := adminClient(t, url)
	if _, err := admin.GetTeam(t.Context(), teamBID); err != nil {
		t.Fatalf("team-b's server team after revocation: %v, want it kept", err)
	}
	label("allowed")
	ready(t, teamB)

	scenariof(t, "an EscalationPolicy in team-b naming team-a's team ID is refused (TeamNotInNamespace), nothing written")
	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: grab, namespace: team-b}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenancy}
  forProvider:
    teamId: %d
    levels: [{timeout: 5m, targets: [{kind: oncall}]}]
`, teamAID))
	grab := &v1alpha1.EscalationPolicy{ObjectMeta: om("team-b", "grab")}
	condition(t, grab, xpv2.TypeReady, corev1.ConditionFalse, "TeamNotInNamespace")
	if p := stateAt(t, url).Policies[teamAID]; !p.IsEmpty() {
		t.Fatalf("team-a's policy was written: %+v", p)
	}

	scenariof(t, "children (a DeadmanSwitch, an Integration) use team-scoped keys only")
	apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: watchdog, namespace: team-a}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenancy}
  forProvider: {teamIdRef: {name: oncall}, matcher: alertname=Watchdog, timeout: 10m}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: am, namespace: team-a}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenancy}
  forProvider: {teamIdRef: {name: oncall}, name: am}
  writeConnectionSecretToRef: {name: am-webhook}
`)
	sw := &v1alpha1.DeadmanSwitch{ObjectMeta: om("team-a", "watchdog")}
	in := &v1alpha1.Integration{ObjectMeta: om("team-a", "am")}
	ready(t, sw)
	ready(t, in)
	time.Sleep(2 * time.Second)
	var scopes map[string]map[string]int
	_ = adminAt(url, http.MethodGet, "/admin/scopes", nil, &scopes)
	team, wide := 0, 0
	for route, by := range scopes {
		if !strings.Contains(route, "/deadman/") && !strings.Contains(route, "/integrations") && !strings.Contains(route, "/escalation") {
			continue
		}
		team += by["team"]
		wide += by["instance"] + by["admin"]
		if by["instance"]+by["admin"] > 0 {
			t.Errorf("%s was called with an instance or admin key %d times", route, by["instance"]+by["admin"])
		}
	}
	fmt.Printf("    requests of children by team-scoped keys: %d, by instance or admin keys: %d\n", team, wide)
	if team == 0 {
		t.Fatal("no child request used a team-scoped key")
	}

	scenariof(t, "a key rotation of the instance ServiceAccount: mint, write in place, revoke the old key, with no failed reconcile")
	before := &corev1.Secret{}
	_ = env.kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: "tenancy-instance-credentials"}, before)
	oldKeyID := before.Annotations["terdut.ryuvia.com/key-id"]
	start := time.Now()
	apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: terdut-operator, namespace: crossplane-system}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenancy}
  writeConnectionSecretToRef: {name: tenancy-instance-credentials}
  forProvider:
    name: terdut-operator
    scope: instance
    bootstrap: {username: admin}
    keyRotation: {rotationRequest: rotate-1}
`)
	mrs := []resourceRef{{"crossplane-system", sa}, {"team-a", teamA}, {"team-b", teamB}, {"team-a", sw}, {"team-a", in}}
	failed := 0
	eventually(t, 60*time.Second, "rotation done", func() string {
		for _, m := range mrs {
			get(t, m.mg)
			if m.mg.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionFalse {
				failed++
			}
		}
		s := &corev1.Secret{}
		_ = env.kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: "tenancy-instance-credentials"}, s)
		if s.Annotations["terdut.ryuvia.com/key-id"] == oldKeyID || s.Annotations["terdut.ryuvia.com/revoke-key-id"] != "" {
			return "not rotated yet"
		}
		return ""
	})
	// Two more polls of every MR with the new key.
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		for _, m := range mrs {
			get(t, m.mg)
			if m.mg.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionFalse {
				failed++
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	healthy := map[string]bool{}
	for _, m := range mrs {
		healthy[m.ns+"/"+m.mg.GetName()] = true
	}
	var warnings []string
	for _, w := range warningsSince(t, start, "team-a", "team-b", "crossplane-system") {
		if healthy[w.object] {
			warnings = append(warnings, w.object+": "+w.reason)
		}
	}
	rotated := &corev1.Secret{}
	must(t, env.kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: "tenancy-instance-credentials"}, rotated), "read the rotated Secret")
	var oldKey, newKey terdutdouble.Verdict
	must(t, adminAt(url, http.MethodPost, "/admin/verify", map[string]string{"key": string(before.Data["token"])}, &oldKey), "verify the old key")
	must(t, adminAt(url, http.MethodPost, "/admin/verify", map[string]string{"key": string(rotated.Data["token"])}, &newKey), "verify the new key")
	fmt.Printf("    rotation: key %s replaced; the old key accepted %t, the new one %t; failed reconciles seen: %d; warning events since: %d\n", oldKeyID, oldKey.Valid, newKey.Valid, failed, len(warnings))
	if oldKey.Valid || !newKey.Valid {
		t.Errorf("after the rotation the server accepts the old key: %t, the new key: %t; want only the new one", oldKey.Valid, newKey.Valid)
	}
	if failed != 0 || len(warnings) != 0 {
		t.Fatalf("requests failed during the rotation: %d Synced=False observations, warnings %v", failed, warnings)
	}

	scenariof(t, "deleting team-a's Team removes its team-scoped service account and key Secret")
	for _, m := range []resourceRef{{"team-a", in}, {"team-a", sw}, {"team-b", grab}, {"team-b", teamB}, {"team-a", teamA}} {
		deleteAndWait(t, m.mg)
	}
	for _, a := range stateAt(t, url).ServiceAccounts {
		if a.Scope == terdut.ScopeTeam {
			t.Errorf("team-scoped account %q left after its Team was deleted", a.Name)
		}
	}
	secrets := &corev1.SecretList{}
	_ = env.kube.List(t.Context(), secrets)
	for _, s := range secrets.Items {
		if s.Labels["terdut.ryuvia.com/team-id"] != "" && s.Annotations["terdut.ryuvia.com/provider-config-id"] == "ClusterProviderConfig/tenancy" {
			t.Errorf("team key Secret %s/%s left after its Team was deleted", s.Namespace, s.Name)
		}
	}
	deleteAndWait(t, sa)
}

type resourceRef struct {
	ns string
	mg resource.Managed
}

func adminClient(t *testing.T, url string) *terdut.Client {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: "tenancy-instance-credentials"}, s); err != nil {
		t.Fatal(err)
	}
	c, err := terdut.New(terdut.Options{Endpoint: url, Token: terdut.Secret(s.Data["token"])})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type warning struct{ object, reason string }

// warningsSince lists Warning events in the namespaces since t0.
func warningsSince(t *testing.T, t0 time.Time, namespaces ...string) []warning {
	t.Helper()
	var out []warning
	for _, ns := range namespaces {
		evs := &corev1.EventList{}
		_ = env.kube.List(t.Context(), evs, client.InNamespace(ns))
		for _, e := range evs.Items {
			last := e.LastTimestamp.Time
			if e.EventTime.After(last) {
				last = e.EventTime.Time
			}
			if e.Type == corev1.EventTypeWarning && last.After(t0) {
				out = append(out, warning{object: e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name, reason: e.Reason})
			}
		}
	}
	return out
}
