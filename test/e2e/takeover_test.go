//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/discover"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// takeoverLabel admits a namespace to the take-over scenario's
// ClusterProviderConfig.
var takeoverLabel = map[string]string{"terdut.ryuvia.com/allowed-server": "takeover"}

// TestTakeOver: a server made by hand is taken over with cmd/discover's
// manifests, and nothing on it is written.
func TestTakeOver(t *testing.T) {
	scenariof(t, "a server made by hand (25 teams with 3-level policies, switches with and without names, integrations of each kind, service accounts) and 2 teams already managed by MRs -> cmd/discover writes the same files twice, skips what the MRs hold; applied: all Ready, 0 writes to the imported objects; run again: every object skipped")
	ctx := t.Context()
	d, err := env.stack.StartDouble(ctx, "terdut-double-takeover")
	if err != nil {
		t.Fatal(err)
	}
	addDouble(d.URL)
	handMade(t, d.URL)
	takeoverConfig(t, d)

	ns := "takeover-managed"
	namespace(t, ns, takeoverLabel)
	for _, name := range []string{"managed-a", "managed-b"} {
		apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: takeover}
  forProvider: {displayName: %[1]q}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: %[1]s-watchdog, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: takeover}
  forProvider: {teamIdRef: {name: %[1]s}, matcher: "alertname=Watchdog", timeout: 10m}
`, name, ns))
		ready(t, &v1alpha1.Team{ObjectMeta: om(ns, name)})
		ready(t, &v1alpha1.DeadmanSwitch{ObjectMeta: om(ns, name+"-watchdog")})
	}

	bin := filepath.Join(env.run, "bin", "discover")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/discover")
	build.Dir = env.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/discover: %v: %s", err, out)
	}
	first, second := t.TempDir(), t.TempDir()
	start := time.Now()
	printed := discoverInto(t, bin, first)
	took := time.Since(start)
	discoverInto(t, bin, second)
	a, b := tree(t, first), tree(t, second)
	if len(a) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("two discovery runs of one server wrote different files: %d and %d", len(a), len(b))
	}
	fmt.Printf("    discovery: %d files in %.1f s, the same twice; it printed:\n%s", len(a), took.Seconds(), indent(printed))
	for _, want := range []string{"skipped team managed-a", "skipped team managed-b", "skipped switch \"alertname=Watchdog\" of team managed-a"} {
		if !strings.Contains(printed, want) {
			t.Errorf("discovery did not print %q (an object an MR already holds must be skipped, never written twice)", want)
		}
	}
	if strings.Contains(printed, "refused") {
		t.Errorf("discovery tried to write to the server:\n%s", printed)
	}

	for _, n := range namespacesOf(printed) {
		namespace(t, n, takeoverLabel)
	}
	before := pathCounters(t, d.URL)
	if err := kubectl(nil, "apply", "-R", "-f", first); err != nil {
		t.Fatal(err)
	}
	imported := allDiscovered(t)
	if len(imported) != len(a) {
		t.Fatalf("%d discovered MRs in the cluster, %d files", len(imported), len(a))
	}
	readyAt := time.Now()
	for _, mg := range imported {
		ready(t, mg)
	}
	fmt.Printf("    %d imported MRs Ready %.1f s after the apply\n", len(imported), time.Since(readyAt).Seconds())
	// NOTE: every team's objects read at least twice more: the MRs have
	// observed them after being Ready, and found nothing to write.
	polledAt(t, d.URL, 2, "/api/teams/"+firstTeam(t, d.URL)+"/deadman/switches")
	writes, keys := writesSince(before, pathCounters(t, d.URL))
	fmt.Printf("    writes to the imported objects: %d %v; the provider's own team-key accounts and keys: %d (POSTs to /api/service-accounts)\n", sum(writes), writes, keys)
	if sum(writes) != 0 {
		t.Errorf("taking over wrote to the imported objects: %v", writes)
	}

	scenariof(t, "promoted (managementPolicies [\"*\"] on the Teams, policies and switches) -> 0 writes; one policy edited in git -> exactly one PUT")
	before = pathCounters(t, d.URL)
	promoted := 0
	for _, mg := range imported {
		var kind string
		switch mg.(type) {
		case *v1alpha1.Team:
			kind = "team"
		case *v1alpha1.EscalationPolicy:
			kind = "escalationpolicy"
		case *v1alpha1.DeadmanSwitch:
			kind = "deadmanswitch"
		default:
			continue
		}
		must(t, kubectl(nil, "patch", kind+"."+v1alpha1.Group, mg.GetName(), "-n", mg.GetNamespace(), "--type=merge", "-p", `{"spec":{"managementPolicies":["*"]}}`), "promote "+mg.GetName())
		promoted++
	}
	for _, mg := range imported {
		ready(t, mg)
	}
	polledAt(t, d.URL, 2, "/api/teams/"+firstTeam(t, d.URL)+"/deadman/switches")
	writes, keys = writesSince(before, pathCounters(t, d.URL))
	fmt.Printf("    %d MRs promoted: writes to the imported objects %d %v, team-key requests %d\n", promoted, sum(writes), writes, keys)
	if sum(writes) != 0 {
		t.Errorf("promoting wrote to the imported objects: %v", writes)
	}
	policy := &v1alpha1.EscalationPolicy{ObjectMeta: om("team-00", "team-00")}
	get(t, policy)
	before = pathCounters(t, d.URL)
	must(t, kubectl(nil, "patch", "escalationpolicy."+v1alpha1.Group, "team-00", "-n", "team-00", "--type=merge", "-p", `{"spec":{"forProvider":{"repeatCount":3}}}`), "edit one policy")
	ready(t, policy)
	polledAt(t, d.URL, 1, "/api/teams/"+firstTeam(t, d.URL)+"/escalation")
	writes, _ = writesSince(before, pathCounters(t, d.URL))
	fmt.Printf("    one policy edited: writes %v\n", writes)
	if sum(writes) != 1 || writes[http.MethodPut+" /api/teams/"+firstTeam(t, d.URL)+"/escalation"] != 1 {
		t.Errorf("one policy edited: writes %v, want exactly one PUT of its team's escalation", writes)
	}

	third := t.TempDir()
	printed = discoverInto(t, bin, third)
	if files := tree(t, third); len(files) != 0 {
		t.Errorf("discovery after the take-over wrote %d files, want none: every object is held", len(files))
	}
	fmt.Printf("    discovery once they are applied: %d files; %d objects skipped as held\n", len(tree(t, third)), strings.Count(printed, "held by "))
}

// handMade makes 25 teams by hand on the double at url.
func handMade(t *testing.T, url string) {
	t.Helper()
	st := stateAt(t, url)
	ids := map[string]int64{}
	for _, u := range st.Users {
		ids[u.Username] = u.ID
	}
	alice, bob := ids["alice"], ids["bob"]
	var h terdutdouble.HandMade
	for i := range 25 {
		ht := terdutdouble.HandMadeTeam{
			Name: fmt.Sprintf("Team %02d", i),
			Policy: &terdut.EscalationPolicy{RepeatCount: 1, FallbackTopic: "ops", Levels: []terdut.EscalationLevel{
				{Timeout: "5m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}}},
				{Timeout: "10m", Targets: []terdut.EscalationTarget{{Kind: "user", UserID: &alice}}},
				{Timeout: "30m", Targets: []terdut.EscalationTarget{{Kind: "user", UserID: &bob}}},
			}},
			Switches: []terdut.DeadmanSwitch{
				{Name: "Watchdog", Matcher: "alertname=Watchdog,cluster=prod", Timeout: "10m"},
				{Matcher: "alertname=Heartbeat", Timeout: "1h", Severity: "warning"},
			},
			Integrations: []terdut.Integration{{Kind: "alertmanager", Name: "am"}},
		}
		switch i % 3 {
		case 1:
			ht.Integrations = append(ht.Integrations, terdut.Integration{Kind: "grafana", Name: "grafana"})
		case 2:
			ht.Integrations = append(ht.Integrations, terdut.Integration{Kind: "webhook", Name: "ci"})
			ht.Accounts = []string{fmt.Sprintf("team-%02d-bot", i)}
		}
		h.Teams = append(h.Teams, ht)
	}
	h.InstanceAccounts = []string{"grafana-sync"}
	must(t, adminAt(url, http.MethodPost, "/admin/hand-made", h, nil), "make the server's objects by hand")
}

// takeoverConfig is the ClusterProviderConfig "takeover" for double d
// (its instance key in crossplane-system), admitting the namespaces
// labelled takeoverLabel.
func takeoverConfig(t *testing.T, d *stack.Double) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "takeover-key"}, StringData: map[string]string{"token": d.AdminKey.Reveal()}}
	must(t, env.kube.Create(t.Context(), sec), "create the take-over key Secret")
	apply(t, fmt.Sprintf(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ClusterProviderConfig
metadata: {name: takeover}
spec:
  endpoint: %s
  credentials:
    source: Secret
    secretRef: {namespace: crossplane-system, name: takeover-key, key: token}
  homeNamespace: crossplane-system
  allowedNamespaces:
    from: Selector
    selector: {matchLabels: {terdut.ryuvia.com/allowed-server: takeover}}
`, d.URL))
}

func discoverInto(t *testing.T, bin, dir string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "--provider-config", "takeover", "--out", dir)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("discover: %v: %s", err, out)
	}
	return string(out)
}

// tree is every file under dir with its content, sorted by path.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel+"\n"+string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func namespacesOf(printed string) []string {
	for l := range strings.SplitSeq(printed, "\n") {
		if v, ok := strings.CutPrefix(l, "namespaces: "); ok {
			return strings.Split(v, ", ")
		}
	}
	return nil
}

// allDiscovered are the MRs discovery wrote, in the cluster.
func allDiscovered(t *testing.T) []resource.Managed {
	t.Helper()
	var out []resource.Managed
	for _, l := range []resource.ManagedList{&v1alpha1.TeamList{}, &v1alpha1.EscalationPolicyList{}, &v1alpha1.DeadmanSwitchList{}, &v1alpha1.IntegrationList{}, &v1alpha1.ServiceAccountList{}} {
		must(t, env.kube.List(t.Context(), l, client.MatchingLabels{discover.LabelDiscovered: "true"}), "list the discovered MRs")
		out = append(out, l.GetItems()...)
	}
	return out
}

func firstTeam(t *testing.T, url string) string {
	t.Helper()
	return fmt.Sprint(stateAt(t, url).Teams[0].ID)
}

// writesSince are the writes between two path counts to teams, policies,
// switches and integrations, and apart the POSTs to service accounts (the
// provider's team keys).
func writesSince(before, after map[string]int) (map[string]int, int) {
	writes, keys := map[string]int{}, 0
	for k, n := range after {
		n -= before[k]
		method, path, _ := strings.Cut(k, " ")
		if n == 0 || method == http.MethodGet {
			continue
		}
		if strings.HasPrefix(path, "/api/service-accounts") {
			keys += n
			continue
		}
		writes[k] = n
	}
	return writes, keys
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
