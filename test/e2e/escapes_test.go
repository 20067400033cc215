//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/teamkey"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestTenancyEscapes: sixteen ways a tenant might reach what is not theirs.
// Each must fail to do harm, with the reason the tenant sees.
func TestTenancyEscapes(t *testing.T) {
	scenariof(t, "sixteen tenancy escapes, each must fail to do harm")
	namespace(t, "esc-a", nil)
	namespace(t, "esc-b", nil)
	namespace(t, "esc-x", map[string]string{})
	apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: alpha, namespace: esc-a}
spec:
  forProvider: {displayName: "Escape Alpha"}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: alpha-watchdog, namespace: esc-a}
spec:
  forProvider: {teamIdRef: {name: alpha}, name: watchdog, matcher: alertname=Watchdog, timeout: 15m}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: alpha-am, namespace: esc-a}
spec:
  forProvider: {teamIdRef: {name: alpha}, name: am}
  writeConnectionSecretToRef: {name: alpha-am-webhook}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: beta, namespace: esc-b}
spec:
  forProvider: {displayName: "Escape Beta"}
`)
	alpha := &v1alpha1.Team{ObjectMeta: om("esc-a", "alpha")}
	alphaSwitch := &v1alpha1.DeadmanSwitch{ObjectMeta: om("esc-a", "alpha-watchdog")}
	alphaIn := &v1alpha1.Integration{ObjectMeta: om("esc-a", "alpha-am")}
	beta := &v1alpha1.Team{ObjectMeta: om("esc-b", "beta")}
	alphaID, betaID := externalID(t, ready(t, alpha)), externalID(t, ready(t, beta))
	switchID, inID := externalID(t, ready(t, alphaSwitch)), externalID(t, ready(t, alphaIn))
	alphaKey := webhookKeyAccepted(t, alphaIn)

	tried, succeeded := 0, 0
	escape := func(what string, try func() (refusal, harm string)) {
		t.Helper()
		tried++
		refusal, harm := try()
		if harm != "" {
			succeeded++
			t.Errorf("escape %d (%s) succeeded: %s", tried, what, harm)
			return
		}
		fmt.Printf("    escape %d, %s: refused: %s\n", tried, what, firstLine(refusal))
	}
	refusedWith := func(mg client.Object, reason xpv2.ConditionReason) string {
		t.Helper()
		m := mg.(interface {
			client.Object
			GetCondition(ct xpv2.ConditionType) xpv2.Condition
		})
		eventually(t, 60*time.Second, mg.GetName()+" refused with "+string(reason), func() string {
			if err := env.kube.Get(t.Context(), client.ObjectKeyFromObject(mg), mg); err != nil {
				return err.Error()
			}
			if c := m.GetCondition(xpv2.TypeReady); c.Reason != reason {
				return fmt.Sprintf("Ready %s %s: %s", c.Status, c.Reason, c.Message)
			}
			return ""
		})
		c := m.GetCondition(xpv2.TypeReady)
		return string(c.Reason) + ": " + c.Message
	}
	serverTeam := func(id int64) *terdut.Team {
		tm, err := env.admin.GetTeam(t.Context(), id)
		if err != nil {
			t.Fatalf("team %d on the server: %v", id, err)
		}
		return tm
	}

	escape("a raw teamId of another tenant's team", func() (string, string) {
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: grab, namespace: esc-b}
spec:
  forProvider: {teamId: %d, levels: [{timeout: 1m, targets: [{kind: oncall}]}]}
`, alphaID))
		why := refusedWith(&v1alpha1.EscalationPolicy{ObjectMeta: om("esc-b", "grab")}, "TeamNotInNamespace")
		time.Sleep(8 * time.Second) // two polls: a later reconcile must not slip through either
		if p, err := env.admin.GetEscalationPolicy(t.Context(), alphaID); err != nil || !p.IsEmpty() {
			return why, fmt.Sprintf("alpha's policy is %+v (%v)", p, err)
		}
		return why, ""
	})

	escape("external names set to another tenant's team, switch and integration IDs", func() (string, string) {
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: hijack, namespace: esc-b, annotations: {crossplane.io/external-name: "%d"}}
spec:
  forProvider: {displayName: "Hijacked"}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: hijack, namespace: esc-b, annotations: {crossplane.io/external-name: "%d"}}
spec:
  forProvider: {teamIdRef: {name: beta}, name: hijacked, matcher: a=b, timeout: 1m}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: hijack, namespace: esc-b, annotations: {crossplane.io/external-name: "%d"}}
spec:
  forProvider: {teamIdRef: {name: beta}, kind: grafana, name: hijacked}
  writeConnectionSecretToRef: {name: hijack-webhook}
`, alphaID, switchID, inID))
		why := refusedWith(&v1alpha1.Team{ObjectMeta: om("esc-b", "hijack")}, "ResourceNotOwned")
		refusedWith(&v1alpha1.DeadmanSwitch{ObjectMeta: om("esc-b", "hijack")}, "ResourceNotOwned")
		refusedWith(&v1alpha1.Integration{ObjectMeta: om("esc-b", "hijack")}, "ResourceNotOwned")
		// The refused Team of esc-b now claims alpha's ID: a child naming
		// that ID must still be refused (it once was not).
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: behind-hijack, namespace: esc-b}
spec:
  forProvider: {teamId: %d, levels: [{timeout: 1m, targets: [{kind: oncall}]}]}
`, alphaID))
		refusedWith(&v1alpha1.EscalationPolicy{ObjectMeta: om("esc-b", "behind-hijack")}, "TeamNotInNamespace")
		time.Sleep(8 * time.Second)
		if p, err := env.admin.GetEscalationPolicy(t.Context(), alphaID); err != nil || !p.IsEmpty() {
			return why, fmt.Sprintf("a policy behind the hijacking Team wrote alpha's policy: %+v (%v)", p, err)
		}
		if tm := serverTeam(alphaID); tm.Name != "Escape Alpha" {
			return why, "alpha's team was renamed to " + tm.Name
		}
		if harm := alphaIntact(t, alphaID, switchID, inID); harm != "" {
			return why, harm
		}
		if !webhookKeyAccepted(t, get(t, alphaIn).(*v1alpha1.Integration)) || !alphaKey {
			return why, "alpha's integration key no longer works"
		}
		return why, ""
	})

	escape("an MR in a namespace the ClusterProviderConfig does not admit", func() (string, string) {
		apply(t, teamYAML("esc-x", "sneak", "Escape X"))
		why := refusedWith(&v1alpha1.Team{ObjectMeta: om("esc-x", "sneak")}, "RefNotPermitted")
		if _, err := env.admin.GetTeamByName(t.Context(), "Escape X"); err == nil {
			if tm, _ := env.admin.GetTeamByName(t.Context(), "Escape X"); tm != nil {
				return why, fmt.Sprintf("team %d was created", tm.ID)
			}
		}
		return why, ""
	})

	escape("deleting an MR of an unadmitted namespace with the hand-set external name of an object no MR manages", func() (string, string) {
		loose, err := env.admin.CreateTeam(t.Context(), "Nobody's")
		if err != nil {
			t.Fatal(err)
		}
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: wipe, namespace: esc-x, annotations: {crossplane.io/external-name: "%d"}}
spec:
  forProvider: {displayName: "Nobody's"}
`, loose.ID))
		cr := &v1alpha1.Team{ObjectMeta: om("esc-x", "wipe")}
		why := refusedWith(cr, "RefNotPermitted")
		deleteAndWait(t, cr)
		if _, err := env.admin.GetTeam(t.Context(), loose.ID); err != nil {
			return why, fmt.Sprintf("deleting the MR deleted team %d: %v", loose.ID, err)
		}
		return why + "; deleting it left team " + fmt.Sprint(loose.ID) + " alone", ""
	})

	escape("consent revoked while the MRs are being created", func() (string, string) {
		namespace(t, "esc-c", nil)
		f := fleet{ns: "esc-c", teams: 2, pc: "default"}
		objects := func() int {
			s := state(t)
			return len(s.Teams) + len(s.Switches) + len(s.Integrations)
		}
		apply(t, f.yaml())
		time.Sleep(time.Second)
		atRevoke := objects()
		setLabel(t, "esc-c", "terdut.ryuvia.com/allowed-server", "")
		revoked := time.Now()
		why := refusedWith(&v1alpha1.Team{ObjectMeta: om("esc-c", "t0")}, "RefNotPermitted")
		waitFor(30*time.Second, func() bool {
			left, _ := notRefused(t, "esc-c")
			return len(left) == 0
		})
		// NOTE: a reconcile that passed the gate just before the label
		// went may still finish its create (on CI, one did after t0 was
		// refused): the count is taken once it holds for 3 s, and what
		// follows may not add to it.
		before, settled := objects(), time.Now()
		for time.Since(settled) < 3*time.Second && time.Since(revoked) < 30*time.Second {
			time.Sleep(250 * time.Millisecond)
			if n := objects(); n != before {
				before, settled = n, time.Now()
			}
		}
		// NOTE: first, as the escape's line is cut after the refusal's start.
		why = fmt.Sprintf("%d server objects made by creates already past the gate when the label went, none after %s; ",
			before-atRevoke, settled.Sub(revoked).Round(100*time.Millisecond)) + why
		time.Sleep(10 * time.Second)
		after := objects()
		if left, _ := notRefused(t, "esc-c"); len(left) > 0 {
			return why, fmt.Sprintf("%d MRs still not refused %s after revocation: %v", len(left), time.Since(revoked).Round(time.Second), left)
		}
		if after != before {
			return why, fmt.Sprintf("%d server objects were made after revocation", after-before)
		}
		return why, ""
	})

	escape("a namespaced ProviderConfig of another namespace", func() (string, string) {
		apply(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: own-key, namespace: esc-a}
stringData: {token: %s}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: own, namespace: esc-a}
spec:
  endpoint: %s
  credentials: {source: Secret, secretRef: {namespace: esc-a, name: own-key, key: token}}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: borrow, namespace: esc-b}
spec:
  providerConfigRef: {kind: ProviderConfig, name: own}
  forProvider: {displayName: "Borrowed"}
`, env.stack.Double.AdminKey.Reveal(), env.doubleURL))
		cr := &v1alpha1.Team{ObjectMeta: om("esc-b", "borrow")}
		condition(t, cr, xpv2.TypeSynced, corev1.ConditionFalse, "")
		why := cr.GetCondition(xpv2.TypeSynced).Message
		if !strings.Contains(why, `ProviderConfig "esc-b/own"`) {
			return why, "refused for another reason"
		}
		if tm, _ := env.admin.GetTeamByName(t.Context(), "Borrowed"); tm != nil {
			return why, fmt.Sprintf("team %d was created", tm.ID)
		}
		return why, ""
	})

	escape("a connection Secret name taken by a Secret the MR does not own", func() (string, string) {
		taken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "esc-b", Name: "taken"}, Data: map[string][]byte{"key": []byte("someone else's")}}
		if err := env.kube.Create(t.Context(), taken); err != nil {
			t.Fatal(err)
		}
		apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: squat, namespace: esc-b}
spec:
  forProvider: {teamIdRef: {name: beta}, name: squat}
  writeConnectionSecretToRef: {name: taken}
`)
		cr := &v1alpha1.Integration{ObjectMeta: om("esc-b", "squat")}
		condition(t, cr, xpv2.TypeSynced, corev1.ConditionFalse, "")
		why := cr.GetCondition(xpv2.TypeSynced).Message
		_ = env.kube.Get(t.Context(), types.NamespacedName{Namespace: "esc-b", Name: "taken"}, taken)
		if string(taken.Data["key"]) != "someone else's" {
			return why, "the Secret was overwritten"
		}
		for _, in := range state(t).Integrations {
			if in.TeamID == betaID && in.Name == "squat" {
				return why, fmt.Sprintf("integration %d was created with a key nobody holds", in.ID)
			}
		}
		return why, ""
	})

	escape("a second Team with the same display name in another namespace", func() (string, string) {
		apply(t, teamYAML("esc-b", "alpha-too", "Escape Alpha"))
		// NOTE: refused at Create (adoption); the refusal is kept on
		// Ready, where crossplane-runtime would show Creating (review 9).
		cr := &v1alpha1.Team{ObjectMeta: om("esc-b", "alpha-too")}
		why := refusedWith(cr, "ResourceNotOwned")
		if !strings.Contains(why, "is already managed by Team esc-a/alpha") {
			return why, "refused for another reason"
		}
		if meta.GetExternalName(cr) != "" {
			return why, "it took team " + meta.GetExternalName(cr)
		}
		if tm := serverTeam(alphaID); tm.Name != "Escape Alpha" {
			return why, "alpha's team was changed"
		}
		return why, ""
	})

	escape("an instance-scoped ServiceAccount outside the provider's namespace", func() (string, string) {
		apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: steal, namespace: esc-b}
spec:
  writeConnectionSecretToRef: {name: stolen}
  forProvider: {name: esc-steal, scope: instance}
`)
		why := refusedWith(&v1alpha1.ServiceAccount{ObjectMeta: om("esc-b", "steal")}, "InstanceScopeNotPermitted")
		if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "esc-b", Name: "stolen"}, &corev1.Secret{}); err == nil {
			return why, "an instance key was written to esc-b"
		}
		if sa, _ := env.admin.GetServiceAccountByName(t.Context(), "esc-steal"); sa != nil {
			return why, fmt.Sprintf("service account %d was created", sa.ID)
		}
		return why, ""
	})

	// Review item 1: accounts of the whole server, or of another team,
	// that a tenant's ServiceAccount names.
	account := func(a terdut.ServiceAccount) int64 {
		got, err := env.admin.CreateServiceAccount(t.Context(), a)
		if err != nil {
			t.Fatalf("service account %s: %v", a.Name, err)
		}
		t.Cleanup(func() { _ = env.admin.DeleteServiceAccount(context.Background(), got.ID) })
		return got.ID
	}
	botID := account(terdut.ServiceAccount{Name: "esc-ci-bot", Scope: terdut.ScopeInstance})
	alphaBotID := account(terdut.ServiceAccount{Name: "esc-alpha-bot", Scope: terdut.ScopeTeam, TeamID: &alphaID})
	keysOf := func(id int64) int {
		for _, a := range state(t).ServiceAccounts {
			if a.ID == id {
				return len(a.KeyIDs)
			}
		}
		return 0
	}
	escape("a team-scoped ServiceAccount named like an instance account, and one like another team's account", func() (string, string) {
		apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: bot, namespace: esc-b}
spec:
  writeConnectionSecretToRef: {name: bot-key}
  forProvider: {name: esc-ci-bot, scope: team, teamIdRef: {name: beta}}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: alpha-bot, namespace: esc-b}
spec:
  writeConnectionSecretToRef: {name: alpha-bot-key}
  forProvider: {name: esc-alpha-bot, scope: team, teamIdRef: {name: beta}}
`)
		why := refusedWith(&v1alpha1.ServiceAccount{ObjectMeta: om("esc-b", "bot")}, "ResourceNotOwned")
		why += "; " + refusedWith(&v1alpha1.ServiceAccount{ObjectMeta: om("esc-b", "alpha-bot")}, "ResourceNotOwned")
		for _, name := range []string{"bot-key", "alpha-bot-key"} {
			// NOTE: crossplane-runtime publishes an empty connection Secret
			// after any Observe; what matters is that no key is in it.
			s := &corev1.Secret{}
			if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "esc-b", Name: name}, s); err == nil && len(s.Data["token"]) > 0 {
				return why, "a key was written to esc-b/" + name
			}
		}
		if n, m := keysOf(botID), keysOf(alphaBotID); n+m != 0 {
			return why, fmt.Sprintf("keys minted: %d on the instance account, %d on alpha's", n, m)
		}
		return why, ""
	})

	escape("a ServiceAccount named like the provider's key account of another team", func() (string, string) {
		out, err := kubectlOut(fmt.Appendf(nil, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: squat-key, namespace: esc-b}
spec:
  writeConnectionSecretToRef: {name: squat-key}
  forProvider: {name: crossplane-team-%d, scope: team, teamIdRef: {name: beta}}
`, alphaID), "apply", "-f", "-")
		if err == nil {
			return out, "the API server took it"
		}
		if sa, _ := env.admin.GetServiceAccountByName(t.Context(), fmt.Sprintf("crossplane-team-%d", alphaID)); sa != nil && (sa.TeamID == nil || *sa.TeamID != alphaID) {
			return out, "alpha's key account was changed"
		}
		return out, ""
	})

	escape("a namespaced ProviderConfig that reads the provider's own token file and sends it to the tenant's endpoint", func() (string, string) {
		var got []string
		for _, src := range []string{"{source: Filesystem, fs: {path: /var/run/secrets/kubernetes.io/serviceaccount/token}}", "{source: Environment, env: {name: HOME}}"} {
			out, err := kubectlOut([]byte(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: exfil, namespace: esc-b}
spec:
  endpoint: http://127.0.0.1:9
  credentials: `+src+`
`), "apply", "-f", "-")
			if err == nil {
				return out, "the API server took a ProviderConfig with credentials " + src
			}
			got = append(got, firstLine(out))
		}
		return strings.Join(got, "; "), ""
	})

	escape("a team-scoped key used against another team's objects", func() (string, string) {
		secrets := &corev1.SecretList{}
		if err := env.kube.List(t.Context(), secrets, client.InNamespace("crossplane-system"), client.MatchingLabels{"terdut.ryuvia.com/team-id": fmt.Sprint(alphaID)}); err != nil || len(secrets.Items) == 0 {
			t.Fatalf("alpha's team key Secret: %v", err)
		}
		c, err := terdut.New(terdut.Options{Endpoint: env.doubleURL, Token: terdut.Secret(secrets.Items[0].Data["token"]), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, lerr := c.ListIntegrations(t.Context(), betaID)
		_, cerr := c.CreateDeadmanSwitch(t.Context(), betaID, terdut.DeadmanSwitch{Matcher: "a=b", Timeout: "1m"})
		why := fmt.Sprintf("listing beta's integrations: %v; creating a switch in beta: %v", lerr, cerr)
		if !terdut.IsForbidden(lerr) || !terdut.IsForbidden(cerr) {
			return why, "alpha's key reached beta's team"
		}
		return why, ""
	})

	escape("deleting a refused team-scoped ServiceAccount whose external name is an instance account made by hand (a finalizer of the tenant's own keeps it reconciled)", func() (string, string) {
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: wipe-bot, namespace: esc-b, finalizers: ["esc.example/hold"], annotations: {crossplane.io/external-name: "%d"}}
spec:
  writeConnectionSecretToRef: {name: wipe-bot-key}
  forProvider: {name: esc-ci-bot, scope: team, teamIdRef: {name: beta}}
`, botID))
		cr := &v1alpha1.ServiceAccount{ObjectMeta: om("esc-b", "wipe-bot")}
		why := refusedWith(cr, "ResourceNotOwned")
		deletionReconciled(t, cr, "GET /api/service-accounts", nil)
		if !accountThere(t, botID) {
			return why, fmt.Sprintf("deleting the MR deleted instance account %d", botID)
		}
		return why + "; deleting it left account " + fmt.Sprint(botID) + " alone", ""
	})

	escape("deleting an EscalationPolicy of one's own team whose external name is another team's ID (a finalizer of the tenant's own keeps it reconciled)", func() (string, string) {
		paging := terdut.EscalationPolicy{RepeatCount: 1, Levels: []terdut.EscalationLevel{{Timeout: "5m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}}}}}
		must(t, env.admin.PutEscalationPolicy(t.Context(), alphaID, paging), "alpha's policy")
		t.Cleanup(func() { _ = env.admin.PutEscalationPolicy(context.Background(), alphaID, terdut.EscalationPolicy{}) })
		// NOTE: a fresh Team of the tenant's own, whose children never
		// made a key of it yet.
		apply(t, teamYAML("esc-b", "fresh", "Escape Fresh"))
		ready(t, &v1alpha1.Team{ObjectMeta: om("esc-b", "fresh")})
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: silence, namespace: esc-b, finalizers: ["esc.example/hold"], annotations: {crossplane.io/external-name: "%d"}}
spec:
  managementPolicies: [Observe]
  forProvider: {teamIdRef: {name: fresh}, levels: [{timeout: 1m, targets: [{kind: oncall}]}]}
`, alphaID))
		cr := &v1alpha1.EscalationPolicy{ObjectMeta: om("esc-b", "silence")}
		condition(t, cr, xpv2.TypeSynced, corev1.ConditionFalse, "")
		why := cr.GetCondition(xpv2.TypeSynced).Message
		// NOTE: observe-only while it lives; once it is being deleted,
		// its policies are flipped to all, so that its Delete runs.
		deletionReconciled(t, cr, "GET /api/teams/{id}", func() {
			if out, err := kubectlOut(nil, "-n", "esc-b", "patch", "escalationpolicy.terdut.ryuvia.com", "silence", "--type=merge", "-p", `{"spec":{"managementPolicies":["*"]}}`); err != nil {
				t.Fatalf("flipping the terminating policy's managementPolicies: %v: %s", err, out)
			}
		})
		if p, err := env.admin.GetEscalationPolicy(t.Context(), alphaID); err != nil || p.IsEmpty() {
			return why, fmt.Sprintf("alpha's policy after deleting the MR: %+v (%v): its paging is off", p, err)
		}
		return why + "; deleting it left alpha's policy alone", ""
	})

	escape("a tenant's ProviderConfig whose team key Secret name is another config's (a 40-bit name collision, planted), its child's requests going to the tenant's endpoint", func() (string, string) {
		// The tenant's endpoint: a proxy to the server that records
		// every key sent to it.
		var mu sync.Mutex
		seen := map[string]bool{}
		target, _ := url.Parse(env.doubleURL)
		proxy := httputil.NewSingleHostReverseProxy(target)
		tenantEnd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] = true
			mu.Unlock()
			proxy.ServeHTTP(w, r)
		}))
		defer tenantEnd.Close()
		tenantKey := tenantInstanceKey(t)
		alphaKeys := &corev1.SecretList{}
		if err := env.kube.List(t.Context(), alphaKeys, client.InNamespace("crossplane-system"), client.MatchingLabels{"terdut.ryuvia.com/team-id": fmt.Sprint(alphaID)}); err != nil || len(alphaKeys.Items) == 0 {
			t.Fatalf("alpha's team key Secret: %v", err)
		}
		victim := alphaKeys.Items[0]
		planted := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: teamkey.SecretName(teamkey.ConfigID("ProviderConfig", "esc-b", "collide"), tenantEnd.URL, alphaID), Labels: victim.Labels, Annotations: victim.Annotations},
			Data:       victim.Data,
		}
		must(t, env.kube.Create(t.Context(), planted), "plant the colliding Secret")
		t.Cleanup(func() { _ = env.kube.Delete(context.Background(), planted) })
		apply(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: collide-key, namespace: esc-b}
stringData: {token: %s}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: collide, namespace: esc-b}
spec:
  endpoint: %s
  credentials: {source: Secret, secretRef: {namespace: esc-b, name: collide-key, key: token}}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: collide, namespace: esc-b, annotations: {crossplane.io/external-name: "%d"}}
spec:
  providerConfigRef: {kind: ProviderConfig, name: collide}
  managementPolicies: [Observe]
  forProvider: {displayName: "Escape Alpha"}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: collide, namespace: esc-b}
spec:
  providerConfigRef: {kind: ProviderConfig, name: collide}
  forProvider: {teamIdRef: {name: collide}, name: collided, matcher: a=b, timeout: 1m}
`, tenantKey.Reveal(), tenantEnd.URL, alphaID))
		sw := &v1alpha1.DeadmanSwitch{ObjectMeta: om("esc-b", "collide")}
		why := ""
		waitFor(150*time.Second, func() bool {
			if env.kube.Get(t.Context(), client.ObjectKeyFromObject(sw), sw) == nil {
				why = sw.GetCondition(xpv2.TypeSynced).Message
			}
			return strings.Contains(why, "written for another provider config")
		})
		mu.Lock()
		defer mu.Unlock()
		if seen[string(victim.Data["token"])] {
			return why, "alpha's team key was sent to the tenant's endpoint"
		}
		if !strings.Contains(why, "written for another provider config") {
			return why, "not refused for the Secret recorded for another config"
		}
		got := &corev1.Secret{}
		if err := env.kube.Get(t.Context(), client.ObjectKeyFromObject(planted), got); err != nil || !bytes.Equal(got.Data["token"], victim.Data["token"]) {
			return why, fmt.Sprintf("the colliding Secret was overwritten or deleted (%v)", err)
		}
		return why, ""
	})

	fmt.Printf("    %d escapes tried, %d succeeded\n", tried, succeeded)
	for _, ns := range []string{"esc-b", "esc-c", "esc-x", "esc-a"} {
		dropTenantFinalizers(t, ns)
		if _, err := kubectlOut(nil, "-n", ns, "delete", "team,escalationpolicy,deadmanswitch,integration,serviceaccounts.terdut.ryuvia.com,providerconfigs.terdut.ryuvia.com", "--all", "--wait=false"); err != nil {
			t.Error(err)
		}
	}
	for _, ns := range []string{"esc-b", "esc-c", "esc-x", "esc-a"} {
		if left := waitGone(t, ns, 90*time.Second); len(left) > 0 {
			t.Errorf("left in %s: %v", ns, left)
		}
	}
	if out, _ := kubectlOut(nil, "get", "serviceaccounts.terdut.ryuvia.com", "-A", "--no-headers"); strings.Contains(out, "esc-") {
		t.Errorf("ServiceAccounts left: %s", out)
	}
}

// deletionReconciled deletes mg, which carries a finalizer of the tenant's
// own, runs then (if any) on the terminating MR, and waits until the provider has reconciled its deletion: route, a
// request that reconcile makes, reached the server after the delete (then two
// seconds more, for a Delete in the same reconcile). It fails the test when
// no such request comes: an escape whose deletion was never reconciled
// proved nothing.
func deletionReconciled(t *testing.T, mg client.Object, route string, then func()) {
	t.Helper()
	before := counters(t)[route]
	must(t, env.kube.Delete(t.Context(), mg), "delete "+mg.GetName())
	if then != nil {
		then()
	}
	eventually(t, 60*time.Second, "the provider reconciling the deletion of "+mg.GetName(), func() string {
		if counters(t)[route] > before {
			return ""
		}
		return "no " + route + " since the delete"
	})
	time.Sleep(2 * time.Second)
}

// alphaIntact says what of alpha's switch and integration is not as alpha's
// MRs made them: there, on alpha's team, with the same ID and fields; ""
// when both are.
func alphaIntact(t *testing.T, teamID, switchID, inID int64) string {
	t.Helper()
	st := state(t)
	sw := slices.IndexFunc(st.Switches, func(s terdutdouble.StateSwitch) bool { return s.ID == switchID })
	switch {
	case sw < 0:
		return fmt.Sprintf("alpha's switch %d was deleted", switchID)
	case st.Switches[sw].TeamID != teamID || st.Switches[sw].Name != "watchdog" || st.Switches[sw].Matcher != "alertname=Watchdog" || !sameDuration(st.Switches[sw].Timeout, 15*time.Minute):
		return fmt.Sprintf("alpha's switch was changed: %+v", st.Switches[sw])
	}
	in := slices.IndexFunc(st.Integrations, func(i terdutdouble.StateIntegration) bool { return i.ID == inID })
	switch {
	case in < 0:
		return fmt.Sprintf("alpha's integration %d was deleted", inID)
	case st.Integrations[in].TeamID != teamID || st.Integrations[in].Name != "am" || st.Integrations[in].Kind != "alertmanager":
		return fmt.Sprintf("alpha's integration was changed: %+v", st.Integrations[in])
	}
	return ""
}

// sameDuration reports whether a server duration string is d.
func sameDuration(s string, d time.Duration) bool {
	v, err := time.ParseDuration(s)
	return err == nil && v == d
}

// accountThere reports whether service account id is on the server.
func accountThere(t *testing.T, id int64) bool {
	t.Helper()
	for _, a := range state(t).ServiceAccounts {
		if a.ID == id {
			return true
		}
	}
	return false
}

// tenantInstanceKey is a key of an instance-scoped account made for a
// tenant's own ProviderConfig (as if the tenant ran the server it names).
func tenantInstanceKey(t *testing.T) terdut.Secret {
	t.Helper()
	a, err := env.admin.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "esc-tenant-own", Scope: terdut.ScopeInstance})
	must(t, err, "the tenant's own account")
	t.Cleanup(func() { _ = env.admin.DeleteServiceAccount(context.Background(), a.ID) })
	k, err := env.admin.MintKey(t.Context(), a.ID)
	must(t, err, "the tenant's own key")
	return k.Key
}

// dropTenantFinalizers removes the finalizer the escapes' tenants put on
// their MRs in ns (esc.example/hold), so the namespace can be emptied.
func dropTenantFinalizers(t *testing.T, ns string) {
	t.Helper()
	for _, l := range []resource.ManagedList{&v1alpha1.ServiceAccountList{}, &v1alpha1.EscalationPolicyList{}} {
		if err := env.kube.List(t.Context(), l, client.InNamespace(ns)); err != nil {
			t.Error(err)
			continue
		}
		for _, mg := range l.GetItems() {
			if meta.FinalizerExists(mg, tenantFinalizer) {
				meta.RemoveFinalizer(mg, tenantFinalizer)
				if err := env.kube.Update(t.Context(), mg); err != nil {
					t.Errorf("dropping the tenant's finalizer of %s: %v", mg.GetName(), err)
				}
			}
		}
	}
}

// tenantFinalizer is the finalizer of a tenant's own that the escapes put
// on a refused MR: the MR outlives its deletion, and the provider still
// reconciles it (a refused MR carries no finalizer of crossplane-runtime's,
// which would otherwise wait for the tenant's to go first).
const tenantFinalizer = "esc.example/hold"

// setLabel sets (or, with an empty value, removes) a Namespace's label.
func setLabel(t *testing.T, ns, key, value string) {
	t.Helper()
	n := &corev1.Namespace{}
	must(t, env.kube.Get(t.Context(), types.NamespacedName{Name: ns}, n), "get namespace "+ns)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if value == "" {
		delete(n.Labels, key)
	} else {
		n.Labels[key] = value
	}
	must(t, env.kube.Update(t.Context(), n), "label namespace "+ns)
}

// notRefused lists the MRs of ns that made or took a server object and are
// not (yet) refused with RefNotPermitted. (The others never got that far:
// their team reference or their consent stopped them.)
func notRefused(t *testing.T, ns string) ([]string, error) {
	t.Helper()
	mrs, err := mrsIn(t.Context(), ns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mg := range mrs {
		if meta.GetExternalName(mg) != "" && mg.GetCondition(xpv2.TypeReady).Reason != "RefNotPermitted" {
			out = append(out, name(mg))
		}
	}
	return out, nil
}
