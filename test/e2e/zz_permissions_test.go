//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// forbidden is how the API server refuses a request the provider's
// permissions do not cover.
var forbidden = regexp.MustCompile(`[^\n]*is forbidden: User "system:serviceaccount:[^\n]*`)

// TestRunsAsItsRevisionsServiceAccount runs after every scenario (this file
// sorts late): the provider ran as its installed revision's ServiceAccount,
// with the RBAC manager's ClusterRole, and the API server refused it
// nothing the whole suite long.
func TestRunsAsItsRevisionsServiceAccount(t *testing.T) {
	id := env.stack.Identity
	scenariof(t, "the provider ran as %s, bound to ClusterRole %s, and was refused nothing", id.User, id.ClusterRole)
	if want := "system:serviceaccount:crossplane-system:provider-terdut"; id.User != want {
		t.Fatalf("the provider runs as %q, want %q (the ServiceAccount of its installed revision)", id.User, want)
	}
	rules, err := kubectlOut(nil, "get", "clusterrole", id.ClusterRole, "-o", `jsonpath={range .rules[*]}{.apiGroups} {.resources} {.verbs}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("    ClusterRole %s (made by the RBAC manager for revision %s):\n%s", id.ClusterRole, id.Revision, indent(rules))
	if out, err := kubectlOut(nil, "auth", "can-i", "--list", "--as", id.User); err == nil {
		if strings.Contains(out, "*.*") {
			t.Errorf("the provider's ServiceAccount may do anything:\n%s", out)
		}
	}
	log := providerLogs(t)
	refused := forbidden.FindAllString(string(log), 5)
	for _, l := range refused {
		t.Errorf("the API server refused the provider: %s", l)
	}
	fmt.Printf("    %d refusals (forbidden) in %d bytes of provider log\n", len(refused), len(log))
}

// providerLogs is every provider process's log of the suite: the suite's
// provider and the failover scenario's replicas.
func providerLogs(t *testing.T) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(env.run, "provider*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}
