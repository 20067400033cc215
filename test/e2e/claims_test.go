//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// claim is what the suite reads of a claim.
type claim struct {
	Status struct {
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
		Endpoint           string `json:"endpoint"`
		ProviderConfigName string `json:"providerConfigName"`
		TeamID             int64  `json:"teamId"`
		ServerEndpoint     string `json:"serverEndpoint"`
		CredentialsRef     *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"credentialsSecretRef"`
		WebhookSecrets []string `json:"webhookSecrets"`
		Summary        string   `json:"summary"`
	} `json:"status"`
}

func getClaim(ns, kind, name string) (*claim, error) {
	out, err := kubectlOut(nil, "-n", ns, "get", kind, name, "-o", "json")
	if err != nil {
		return nil, err
	}
	c := &claim{}
	return c, json.Unmarshal([]byte(out), c)
}

// claimReady waits until the claim is Synced and Ready, saying on timeout
// what its summary still waits for.
func claimReady(t *testing.T, ns, kind, name string) *claim {
	t.Helper()
	var c *claim
	eventually(t, 4*time.Minute, fmt.Sprintf("%s %s/%s Synced and Ready", kind, ns, name), func() string {
		var err error
		if c, err = getClaim(ns, kind, name); err != nil {
			return err.Error()
		}
		got := map[string]string{}
		for _, cd := range c.Status.Conditions {
			got[cd.Type] = cd.Status + " " + cd.Reason + " " + cd.Message
		}
		if !strings.HasPrefix(got["Synced"], "True") || !strings.HasPrefix(got["Ready"], "True") {
			return fmt.Sprintf("Synced %q, Ready %q; summary: %s", got["Synced"], got["Ready"], c.Status.Summary)
		}
		return ""
	})
	return c
}

// claimCondition waits until the claim's condition typ reads want ("False
// Reason") and returns its message.
func claimCondition(t *testing.T, ns, kind, name, typ, want string) string {
	t.Helper()
	msg := ""
	eventually(t, 2*time.Minute, fmt.Sprintf("%s %s/%s %s %s", kind, ns, name, typ, want), func() string {
		c, err := getClaim(ns, kind, name)
		if err != nil {
			return err.Error()
		}
		for _, cd := range c.Status.Conditions {
			if cd.Type == typ {
				if got := cd.Status + " " + cd.Reason; got != want {
					return typ + " is " + got + ": " + cd.Message
				}
				msg = cd.Message
				return ""
			}
		}
		return "no " + typ + " condition yet"
	})
	return msg
}

// warningEvent waits for a Warning event with reason on the object name in ns.
func warningEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, 2*time.Minute, "a "+reason+" warning event on "+ns+"/"+name, func() string {
		ev, err := kubectlOut(nil, "-n", ns, "get", "events", "-o", "name",
			"--field-selector", "involvedObject.name="+name+",reason="+reason+",type=Warning")
		if err != nil {
			return err.Error()
		}
		if strings.TrimSpace(ev) == "" {
			return "none yet"
		}
		return ""
	})
}

// gone waits until `kubectl get ARGS` finds nothing.
func gone(t *testing.T, what string, args ...string) {
	t.Helper()
	eventually(t, 3*time.Minute, what+" gone", func() string {
		out, err := kubectlOut(nil, append([]string{"get", "--ignore-not-found", "-o", "name"}, args...)...)
		if err != nil {
			return err.Error()
		}
		if s := strings.TrimSpace(out); s != "" {
			return "still there: " + strings.ReplaceAll(s, "\n", ", ")
		}
		return ""
	})
}

// TestClaims: TerdutServer and TerdutTeam claims composed by the project's
// composition function, which Crossplane core calls over mTLS.
func TestClaims(t *testing.T) {
	scenariof(t, "the composition function runs with mTLS as FunctionRevision ryuvia-function-terdut; the Configuration's XRDs and Compositions are installed")
	if err := env.stack.StartFunction(t.Context()); err != nil {
		t.Fatal(err)
	}

	scenariof(t, "bad claims are refused by the XRDs' validation, with the reason")
	namespace(t, "claims-validation", map[string]string{})
	bad := map[string]string{
		"dsn and postgresClusterRef": `apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutServer
metadata: {name: both, namespace: claims-validation}
spec:
  database:
    dsn: postgres://terdut@db:5432/terdut
    passwordSecretRef: {name: db, key: password}
    postgresClusterRef: {name: pg}
`,
		"a password in the DSN": `apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutServer
metadata: {name: pw, namespace: claims-validation}
spec:
  database:
    dsn: postgres://terdut:hunter2@db:5432/terdut
    passwordSecretRef: {name: db, key: password}
`,
		"Selector without a selector": `apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutServer
metadata: {name: sel, namespace: claims-validation}
spec:
  database: {postgresClusterRef: {name: pg}}
  allowedTeams: {namespaces: {from: Selector}}
`,
		"serverRef and providerConfigRef": `apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutTeam
metadata: {name: two, namespace: claims-validation}
spec:
  displayName: Two
  serverRef: {name: terdut}
  providerConfigRef: {name: default}
`,
	}
	wantMsg := map[string]string{
		"dsn and postgresClusterRef":      "set exactly one of database.dsn",
		"a password in the DSN":           "database.dsn must not carry a password",
		"Selector without a selector":     "allowedNamespaces.selector is required when from is Selector",
		"serverRef and providerConfigRef": "set serverRef or providerConfigRef, not both",
	}
	for what, y := range bad {
		out, err := kubectlOut([]byte(y), "apply", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(out, wantMsg[what]) {
			t.Errorf("a claim with %s: err %v, output %q; want a refusal saying %q", what, err, out, wantMsg[what])
			continue
		}
		fmt.Printf("    refused, %s: %q\n", what, wantMsg[what])
	}

	url := freshDouble(t, "claims")

	scenariof(t, "a TerdutServer claim in platform-oncall (examples/claims as written, replicas 1; endpoint -> a fresh double) -> its pod held not Ready: no /api/bootstrap; then Ready: bootstrap ServiceAccount, ClusterProviderConfig, claim Synced and Ready")
	nsYAML, _ := os.ReadFile(filepath.Join(env.root, "examples/claims/00-namespaces.yaml"))
	apply(t, string(nsYAML))
	srv, _ := os.ReadFile(filepath.Join(env.root, "examples/claims/terdutserver.yaml"))
	// NOTE: the pod kwok plays serves nothing: the provider reaches the
	// double through the claim's endpoint override. Replicas stay as written.
	srvYAML := strings.Replace(string(srv), "  replicas: 1\n", "  replicas: 1\n  endpoint: "+url+"\n", 1)
	if srvYAML == string(srv) {
		t.Fatal("examples/claims/terdutserver.yaml no longer has 'replicas: 1' to add the endpoint after")
	}
	sc := serverWithReadyReplica(t, url, srvYAML)
	if sc.Status.Endpoint != url || sc.Status.ProviderConfigName != "platform-oncall.terdut" {
		t.Errorf("claim status: endpoint %q, providerConfigName %q; want %q, platform-oncall.terdut", sc.Status.Endpoint, sc.Status.ProviderConfigName, url)
	}
	boot := ""
	for _, c := range sc.Status.Conditions {
		if c.Type == "Bootstrapped" {
			boot = c.Status + ": " + c.Message
		}
	}
	if !strings.HasPrefix(boot, "True") {
		t.Errorf("the server claim's Bootstrapped condition: %q, want True", boot)
	}
	fmt.Printf("    server claim: %s; Bootstrapped=%s\n", sc.Status.Summary, boot)
	var counts map[string]int
	_ = adminAt(url, http.MethodGet, "/admin/counters", nil, &counts)
	if counts["POST /api/bootstrap"] != 1 {
		t.Errorf("/api/bootstrap called %d times, want 1", counts["POST /api/bootstrap"])
	}
	cpc := &v1alpha1.ClusterProviderConfig{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Name: "platform-oncall.terdut"}, cpc); err != nil {
		t.Fatalf("the composed ClusterProviderConfig: %v", err)
	}
	if cpc.Spec.Endpoint != url || cpc.Spec.HomeNamespace != "platform-oncall" || cpc.Spec.AllowedNamespaces.From != "Selector" {
		t.Errorf("ClusterProviderConfig: endpoint %q, home %q, allowed %q", cpc.Spec.Endpoint, cpc.Spec.HomeNamespace, cpc.Spec.AllowedNamespaces.From)
	}

	scenariof(t, "a rollout: the claim's image tag v0.9.3 -> v0.9.4 rolls a new ReplicaSet; the claim reports it, is Ready again after, with no new bootstrap and the same instance key")
	rollout(t, url, "v0.9.4")

	scenariof(t, "a TerdutServer on a Zalando cluster: without postgres-operator's CRD a clear reason; with the postgresql CRD of postgres-operator "+stack.ZalandoVersion+
		" DatabaseReady follows the cluster, the DSN and PGPASSWORD come from the cluster and its credentials Secret, and a rotation of that Secret is reported until the pods restart")
	condition := func(typ, want string) {
		t.Helper()
		fmt.Printf("    %s=%s: %s\n", typ, want, claimCondition(t, "platform-oncall", "terdutserver", "zalando", typ, want))
	}
	zurl := freshDouble(t, "zalando")
	apply(t, fmt.Sprintf(`apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutServer
metadata: {name: zalando, namespace: platform-oncall}
spec:
  replicas: 1
  endpoint: %s
  database:
    postgresClusterRef: {name: zalando-pg}
`, zurl))
	condition("DatabaseReady", "False PostgresOperatorNotInstalled")
	crd, err := stack.ZalandoCRD(t.Context())
	must(t, err, "find postgres-operator's CRD")
	must(t, kubectl(nil, "apply", "-f", crd), "install postgres-operator's postgresql CRD")
	fmt.Printf("    installed %s\n", crd)
	if err := kubectl(nil, "wait", "--for", "condition=established", "--timeout=60s", "crd/postgresqls.acid.zalan.do"); err != nil {
		t.Fatal(err)
	}
	condition("DatabaseReady", "False NotFound")
	apply(t, `apiVersion: acid.zalan.do/v1
kind: postgresql
metadata: {name: zalando-pg, namespace: platform-oncall}
spec: {teamId: terdut, numberOfInstances: 1, users: {terdut: []}, databases: {terdut: terdut}, postgresql: {version: "17"}, volume: {size: 1Gi}}
`)
	if err := kubectl(nil, "-n", "platform-oncall", "patch", "postgresql", "zalando-pg", "--subresource=status", "--type=merge",
		"-p", `{"status":{"PostgresClusterStatus":"Running"}}`); err != nil {
		t.Fatal(err)
	}
	condition("DatabaseReady", "True Running")
	// The Secret postgres-operator writes for the user, under the name its
	// documentation gives (<user>.<cluster>.credentials.postgresql.acid.zalan.do).
	const pgSecret = "terdut.zalando-pg.credentials.postgresql.acid.zalan.do"
	condition("DatabaseCredentials", "False SecretNotFound")
	password := func() string {
		b := make([]byte, 18)
		_, _ = rand.Read(b)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	creds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform-oncall", Name: pgSecret},
		Data:       map[string][]byte{"username": []byte("terdut"), "password": []byte(password())},
	}
	must(t, env.kube.Create(t.Context(), creds), "create the cluster's credentials Secret")
	condition("DatabaseCredentials", "True Current")
	zdep := &appsv1.Deployment{}
	eventually(t, 2*time.Minute, "the zalando server's Deployment with 1 ready replica", func() string {
		if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "platform-oncall", Name: "zalando"}, zdep); err != nil {
			return err.Error()
		}
		if zdep.Status.ReadyReplicas != 1 {
			return fmt.Sprintf("%d ready", zdep.Status.ReadyReplicas)
		}
		return ""
	})
	dsn, pw := "", ""
	for _, e := range zdep.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.Name == "TERDUT_DATABASE_DSN":
			dsn = e.Value
		case e.Name == "PGPASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			pw = e.ValueFrom.SecretKeyRef.Name + " key " + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if !strings.Contains(dsn, "@zalando-pg.platform-oncall.svc:5432/terdut") || pw != pgSecret+" key password" {
		t.Errorf("the server's DSN %q and PGPASSWORD from %q; want the cluster's host and database, and %s key password", dsn, pw, pgSecret)
	}
	fmt.Printf("    DSN %s; PGPASSWORD from Secret %s\n", dsn, pw)
	creds.Data["password"] = []byte(password())
	must(t, env.kube.Update(t.Context(), creds), "rotate the cluster's password")
	condition("DatabaseCredentials", "False CredentialsRotated")
	warningEvent(t, "platform-oncall", "zalando", "CredentialsRotated")
	fmt.Println("    a CredentialsRotated warning event on the claim")
	must(t, kubectl(nil, "-n", "platform-oncall", "rollout", "restart", "deployment/zalando"), "restart the server's pods")
	condition("DatabaseCredentials", "True Current")

	scenariof(t, "deleting a server no team uses, in order: its bootstrap ServiceAccount (which removes its account on the running server) before the Deployment and Service; nothing stays")
	claimReady(t, "platform-oncall", "terdutserver", "zalando")
	zd := watchDeletion(t, serverObjects(t, "platform-oncall", "zalando"))
	must(t, kubectl(nil, "-n", "platform-oncall", "delete", "terdutserver", "zalando", "--wait=false"), "delete the zalando claim")
	zd.wait(t, 4*time.Minute)
	zd.before(t, []string{"ServiceAccount"}, "Deployment", "Service")
	for _, a := range stateAt(t, zurl).ServiceAccounts {
		t.Errorf("service account %q (%s) left on the zalando server", a.Name, a.Scope)
	}
	must(t, env.kube.Delete(t.Context(), creds), "delete the cluster's credentials Secret")

	scenariof(t, "a TerdutTeam claim in team-a on that server -> Team, EscalationPolicy, DeadmanSwitch, Integration Ready; the claim Ready with the team ID")
	// The example's escalation policy pages alice: she signs up first (a
	// fresh server has only the bootstrap admin).
	if err := adminAt(url, http.MethodPost, "/admin/users", terdut.User{Username: "alice"}, nil); err != nil {
		t.Fatal(err)
	}
	team, _ := os.ReadFile(filepath.Join(env.root, "examples/claims/terdutteam.yaml"))
	apply(t, string(team))
	tc := claimReady(t, "team-a", "terdutteam", "web")
	st := stateAt(t, url)
	var serverTeam *terdut.Team
	for i := range st.Teams {
		if st.Teams[i].Name == "Web" {
			serverTeam = &st.Teams[i]
		}
	}
	if serverTeam == nil || tc.Status.TeamID != serverTeam.ID {
		t.Fatalf("claim teamId %d; server teams %+v", tc.Status.TeamID, st.Teams)
	}
	sec := &corev1.Secret{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: "web-prod-alertmanager-webhook"}, sec); err != nil {
		t.Fatalf("the integration's webhook Secret: %v", err)
	}
	if len(sec.Data["url"]) == 0 || len(sec.Data["key"]) == 0 {
		t.Errorf("the webhook Secret has keys %v, want url and key", keys(sec.Data))
	}
	fmt.Printf("    team claim: teamId %d, %s; webhook Secret keys %v\n", tc.Status.TeamID, tc.Status.Summary, keys(sec.Data))
	if tc.Status.ServerEndpoint != url || tc.Status.CredentialsRef == nil {
		t.Fatalf("team claim status: serverEndpoint %q, credentialsSecretRef %+v; want %q and the team key's Secret", tc.Status.ServerEndpoint, tc.Status.CredentialsRef, url)
	}
	ref := tc.Status.CredentialsRef
	key := &corev1.Secret{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, key); err != nil || len(key.Data[ref.Key]) == 0 {
		t.Errorf("the team key Secret the claim names, %s/%s key %s: %v (key set: %t)", ref.Namespace, ref.Name, ref.Key, err, len(key.Data[ref.Key]) > 0)
	}
	fmt.Printf("    team claim status: serverEndpoint %s, credentialsSecretRef %s/%s key %s (the Secret exists)\n", tc.Status.ServerEndpoint, ref.Namespace, ref.Name, ref.Key)
	out, err := kubectlOut(nil, "get", "managed", "-A")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("    $ kubectl get managed -A\n%s", indent(out))
	for _, want := range []string{
		"serviceaccount.terdut.ryuvia.com/platform-oncall.terdut-instance", "team.terdut.ryuvia.com/web",
		"escalationpolicy.terdut.ryuvia.com/web", "deadmanswitch.terdut.ryuvia.com/web-prod-watchdog", "integration.terdut.ryuvia.com/web-prod-alertmanager",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get managed does not list %s", want)
		}
	}
	out, _ = kubectlOut(nil, "get", "terdutserver,terdutteam", "-A")
	fmt.Printf("    $ kubectl get terdutserver,terdutteam -A\n%s", indent(out))

	scenariof(t, "a TerdutTeam claim in team-c, which the server's allowedTeams does not admit: not Ready, the summary says why; labelling team-c admits it")
	namespace(t, "team-c", map[string]string{})
	apply(t, `apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutTeam
metadata: {name: ops, namespace: team-c}
spec:
  serverRef: {name: terdut, namespace: platform-oncall}
  displayName: Ops
`)
	refusal := `does not admit namespace "team-c"`
	eventually(t, 2*time.Minute, "the team-c claim's summary naming the refusal", func() string {
		c, err := getClaim("team-c", "terdutteam", "ops")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(c.Status.Summary, refusal) {
			return "summary: " + c.Status.Summary
		}
		return ""
	})
	rc, _ := getClaim("team-c", "terdutteam", "ops")
	fmt.Printf("    refused claim: %s\n", rc.Status.Summary)
	claimCondition(t, "team-c", "terdutteam", "ops", "Composed", "False RefNotPermitted")
	warningEvent(t, "team-c", "ops", "RefNotPermitted")
	fmt.Println("    the claim's condition Composed=False RefNotPermitted and a RefNotPermitted warning event on it")
	for _, tm := range stateAt(t, url).Teams {
		if tm.Name == "Ops" {
			t.Errorf("the refused claim's team exists on the server (ID %d)", tm.ID)
		}
	}
	if err := kubectl(nil, "label", "namespace", "team-c", "terdut.ryuvia.com/oncall-tenant=true"); err != nil {
		t.Fatal(err)
	}
	oc := claimReady(t, "team-c", "terdutteam", "ops")
	fmt.Printf("    after labelling team-c: teamId %d, %s\n", oc.Status.TeamID, oc.Status.Summary)
	if err := kubectl(nil, "-n", "team-c", "delete", "terdutteam", "ops", "--wait=true", "--timeout=120s"); err != nil {
		t.Fatal(err)
	}
	gone(t, "team-c's composed MRs", "-n", "team-c", "team,escalationpolicy,deadmanswitch,integration")

	scenariof(t, "deleting a server a team still uses is held: the server's claim says which team holds it, and nothing of the server is deleted")
	teamObjs := teamObjects(t, "team-a", "web", []string{"prod-watchdog"}, []string{"prod-alertmanager"})
	srvObjs := serverObjects(t, "platform-oncall", "terdut")
	del := watchDeletion(t, append(teamObjs, srvObjs...))
	must(t, kubectl(nil, "-n", "platform-oncall", "delete", "terdutserver", "terdut", "--wait=false"), "delete the server's claim")
	held := claimCondition(t, "platform-oncall", "terdutserver", "terdut", "Synced", "False ReconcileError")
	if !strings.Contains(held, "in-use") || !strings.Contains(held, "terdutteam.team-a.web") {
		t.Errorf("the held claim's Synced message %q names no Usage by team-a/web", held)
	}
	warningEvent(t, "platform-oncall", "terdut", "DeleteCompositeResource")
	fmt.Printf("    the server's claim: Synced=False ReconcileError: %s\n    and a DeleteCompositeResource warning event on it\n", held)
	time.Sleep(15 * time.Second)
	if g := del.gone(); len(g) > 0 {
		t.Errorf("while a team uses the server, gone already: %v", g)
	}
	fmt.Println("    15 s later: every object of the server and the team still there")

	scenariof(t, "deleting that team: its composite goes, which lets the server's go; its MRs delete their objects on the still running server, and only then go the server's ServiceAccount and after it the Deployment and Service; its team and team key are gone from the server")
	must(t, kubectl(nil, "-n", "team-a", "delete", "terdutteam", "web", "--wait=false"), "delete team-a's claim")
	del.wait(t, 6*time.Minute)
	teamMRs := roles(teamObjs, "Team", "EscalationPolicy", "DeadmanSwitch", "Integration")
	del.before(t, teamMRs, "ServiceAccount", "Deployment", "Service", "ClusterProviderConfig")
	del.before(t, []string{"XTerdutTeam"}, "XTerdutServer", "TerdutServer")
	del.before(t, []string{"ServiceAccount"}, "Deployment", "Service")
	st = stateAt(t, url)
	if len(st.Teams) != 0 || len(st.Policies) != 0 || len(st.Switches) != 0 || len(st.Integrations) != 0 {
		t.Errorf("left on the server: %d teams, %d policies, %d switches, %d integrations", len(st.Teams), len(st.Policies), len(st.Switches), len(st.Integrations))
	}
	for _, a := range st.ServiceAccounts {
		if a.Scope == terdut.ScopeTeam {
			t.Errorf("team-scoped account %q left on the server", a.Name)
		}
	}

	gone(t, "every bootstrap ServiceAccount", "-n", "crossplane-system", "serviceaccount.terdut.ryuvia.com")
	gone(t, "every XTerdutServer and XTerdutTeam", "xterdutserver,xterdutteam")
	gone(t, "every Usage and ClusterUsage", "-A", "usage.protection.crossplane.io,clusterusage.protection.crossplane.io")
	left, err := kubectlOut(nil, "-n", "crossplane-system", "get", "secrets", "-o", "name")
	must(t, err, "list the provider namespace's Secrets")
	for l := range strings.FieldsSeq(left) {
		if strings.HasPrefix(l, "secret/platform-oncall.") || l == "secret/"+tc.Status.CredentialsRef.Name {
			t.Errorf("left in the provider namespace: %s", l)
		}
	}
	st = stateAt(t, url)
	for _, a := range st.ServiceAccounts {
		t.Errorf("service account %q (%s) left on the server", a.Name, a.Scope)
	}
	fmt.Printf("    after deletion the server holds %d teams and %d service accounts\n", len(st.Teams), len(st.ServiceAccounts))
}

func deploymentAvailable(d *appsv1.Deployment) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ") + "\n"
}
