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
	for _, d := range bytes.Split(raw, []byte("\n---\n")) {
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
	verbs := []string{}
	for _, v := range rule["verbs"].([]any) {
		verbs = append(verbs, v.(string))
	}
	if sa != subject || env != "POD_NAMESPACE" || get(rule, "resources", 0) != "namespaces" ||
		!slices.Contains(verbs, "get") || !slices.Contains(verbs, "list") || !slices.Contains(verbs, "watch") {
		t.Errorf("install manifest: service account %v, bound %v, env %v, rule %v", sa, subject, env, rule)
	}
}
