package install

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestNamespaceReadIsGranted checks the install manifest: the ClusterRole
// that lets consent read Namespace labels is bound to the ServiceAccount the
// DeploymentRuntimeConfig gives the provider, which also gets POD_NAMESPACE.
func TestNamespaceReadIsGranted(t *testing.T) {
	raw, err := os.ReadFile("provider.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]any{}
	for d := range bytes.SplitSeq(raw, []byte("\n---\n")) {
		var o map[string]any
		if err := yaml.Unmarshal(d, &o); err != nil {
			t.Fatal(err)
		}
		docs[o["kind"].(string)] = o
	}
	get := func(o any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				o = o.(map[string]any)[k]
			case int:
				o = o.([]any)[k]
			}
		}
		return o
	}
	sa := get(docs["DeploymentRuntimeConfig"], "spec", "serviceAccountTemplate", "metadata", "name")
	env := get(docs["DeploymentRuntimeConfig"], "spec", "deploymentTemplate", "spec", "template", "spec", "containers", 0, "env", 0, "name")
	rule := get(docs["ClusterRole"], "rules", 0).(map[string]any)
	subject := get(docs["ClusterRoleBinding"], "subjects", 0, "name")
	ruleVerbs := rule["verbs"].([]any)
	verbs := make([]string, 0, len(ruleVerbs))
	for _, v := range ruleVerbs {
		verbs = append(verbs, v.(string))
	}
	if act := get(docs["ManagedResourceActivationPolicy"], "spec", "activate", 0); act != "*.terdut.ryuvia.com" {
		t.Errorf("the install manifest activates %v, want the provider's kinds (*.terdut.ryuvia.com): safe-start leaves them inactive", act)
	}
	if sa != subject || env != "POD_NAMESPACE" || get(rule, "resources", 0) != "namespaces" ||
		!slices.Contains(verbs, "get") || !slices.Contains(verbs, "list") || !slices.Contains(verbs, "watch") {
		t.Errorf("install manifest: service account %v, bound %v, env %v, rule %v", sa, subject, env, rule)
	}
}

// TestCrossplaneMayComposeTheServer checks that the Configuration's install
// manifest grants Crossplane core, through its aggregated ClusterRole, what
// the TerdutServer composition composes and reads beyond Crossplane's own
// kinds.
func TestCrossplaneMayComposeTheServer(t *testing.T) {
	raw, err := os.ReadFile("configuration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Kind     string
		Metadata struct{ Labels map[string]string }
		Rules    []struct{ APIGroups, Resources, Verbs []string }
	}
	found := false
	for d := range bytes.SplitSeq(raw, []byte("\n---\n")) {
		if err := yaml.Unmarshal(d, &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind == "ClusterRole" {
			found = true
			break
		}
	}
	if !found || role.Metadata.Labels["rbac.crossplane.io/aggregate-to-crossplane"] != "true" {
		t.Fatalf("no ClusterRole aggregated to Crossplane's in configuration.yaml")
	}
	need := map[string][]string{
		"apps/deployments": {"create", "update", "delete"}, "/services": {"create", "update", "delete"},
		"gateway.networking.k8s.io/httproutes": {"create", "update", "delete"}, "acid.zalan.do/postgresqls": {"get", "list"},
	}
	for gr, verbs := range need {
		ok := false
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if g+"/"+res == gr && !slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(r.Verbs, v) }) {
						ok = true
					}
				}
			}
		}
		if !ok {
			t.Errorf("Crossplane is not granted %v on %s", verbs, gr)
		}
	}
}
