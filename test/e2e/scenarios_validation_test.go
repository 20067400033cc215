//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExamplesAndGetManaged(t *testing.T) {
	scenariof(t, "apply examples/terdut -> kubectl get managed lists every MR READY=True SYNCED=True")
	if err := kubectl(nil, "apply", "-f", filepath.Join(env.root, "examples/terdut/00-namespace.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := kubectl(nil, "apply", "-f", filepath.Join(env.root, "examples/terdut")); err != nil {
		t.Fatal(err)
	}
	var out string
	eventually(t, 90*time.Second, "all managed resources ready", func() string {
		var err error
		if out, err = kubectlOut(nil, "get", "managed", "-A"); err != nil {
			return err.Error()
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		rows := 0
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 4 || f[0] == "NAMESPACE" {
				continue
			}
			rows++
			if f[2] != "True" || f[3] != "True" {
				return "not ready: " + l
			}
		}
		if rows < 4 {
			return fmt.Sprintf("%d managed resources listed, want at least 4", rows)
		}
		return ""
	})
	fmt.Println(out)
	scenariof(t, "delete the examples' managed resources, then their namespace -> all gone")
	if err := kubectl(nil, "-n", "team-a", "delete", "integration,deadmanswitch,escalationpolicy,team", "--all", "--wait=true", "--timeout=90s"); err != nil {
		t.Fatal(err)
	}
	for _, tm := range state(t).Teams {
		if tm.Name == "Platform" {
			t.Errorf("the examples' team %d is left on the server", tm.ID)
		}
	}
	if err := kubectl(nil, "delete", "namespace", "team-a", "--wait=true", "--timeout=90s"); err != nil {
		t.Fatal(err)
	}
}

func TestValidation(t *testing.T) {
	ns := "e2e-validation"
	namespace(t, ns, nil)
	cases := map[string]struct{ yaml, want string }{
		"user target without username": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: bad, namespace: e2e-validation}
spec:
  forProvider:
    teamId: 1
    levels: [{timeout: 5m, targets: [{kind: user}]}]
`, "a user target needs a username"},
		"zero timeout": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: bad, namespace: e2e-validation}
spec:
  forProvider: {teamId: 1, matcher: a=b, timeout: 0s}
`, "timeout must be a duration greater than zero"},
		"teamId and a ref": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: bad2, namespace: e2e-validation}
spec:
  forProvider: {teamId: 1, teamIdRef: {name: x}, matcher: a=b, timeout: 1m}
`, "not both"},
		"no team at all": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: bad3, namespace: e2e-validation}
spec:
  forProvider: {matcher: a=b, timeout: 1m}
`, "set teamId, teamIdRef or teamIdSelector"},
		"unknown integration kind": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: bad, namespace: e2e-validation}
spec:
  forProvider: {teamId: 1, kind: pagerduty, name: x}
  writeConnectionSecretToRef: {name: s}
`, "Unsupported value"},
		"integration without a Secret": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: bad2, namespace: e2e-validation}
spec:
  forProvider: {teamId: 1, name: x}
`, "needs spec.writeConnectionSecretToRef"},
		"negative repeatCount": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: bad2, namespace: e2e-validation}
spec:
  forProvider:
    teamId: 1
    repeatCount: -1
    levels: [{timeout: 5m, targets: [{kind: oncall}]}]
`, "should be greater than or equal to 0"},
		"a namespaced ProviderConfig reading the provider's own files": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: bad, namespace: e2e-validation}
spec:
  endpoint: http://127.0.0.1:1
  credentials: {source: Filesystem, fs: {path: /var/run/secrets/kubernetes.io/serviceaccount/token}}
`, "a namespaced ProviderConfig reads its key from a Secret"},
		"a namespaced ProviderConfig reading the provider's environment": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: bad2, namespace: e2e-validation}
spec:
  endpoint: http://127.0.0.1:1
  credentials: {source: Environment, env: {name: KUBERNETES_SERVICE_HOST}}
`, "a namespaced ProviderConfig reads its key from a Secret"},
		"a switch timeout of 1y (issue 20)": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: bad4, namespace: e2e-validation}
spec:
  forProvider: {teamId: 1, matcher: a=b, timeout: 1y}
`, "timeout must be a duration greater than zero, e.g. 15m"},
		"an escalation timeout of 1y (issue 20)": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: bad3, namespace: e2e-validation}
spec:
  forProvider:
    teamId: 1
    levels: [{timeout: 1y, targets: [{kind: oncall}]}]
`, "timeout must be a duration greater than zero, e.g. 5m"},
		"a rotation interval of 1y (issue 20)": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: bad2, namespace: e2e-validation}
spec:
  forProvider: {name: x, scope: team, teamId: 1, keyRotation: {interval: 1y}}
  writeConnectionSecretToRef: {name: s}
`, "keyRotation.interval must be a duration of at least 1m"},
		"a bootstrap whose connection Secret is named like its checkpoint": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: bad3, namespace: e2e-validation}
spec:
  forProvider: {name: x, scope: instance, bootstrap: {username: admin}}
  writeConnectionSecretToRef: {name: bad3-bootstrap-admin}
`, "may not be <metadata.name>-bootstrap-admin"},
		"a request timeout of 1y (issue 20)": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: bad3, namespace: e2e-validation}
spec:
  endpoint: http://127.0.0.1:1
  requestTimeout: 1y
  credentials: {source: Secret, secretRef: {namespace: e2e-validation, name: k, key: token}}
`, "requestTimeout must be a duration greater than zero"},
		"a ClusterProviderConfig whose secretRef names no namespace": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ClusterProviderConfig
metadata: {name: e2e-validation-bad}
spec:
  endpoint: http://127.0.0.1:1
  credentials: {source: Secret, secretRef: {name: k, key: token}}
`, "a ClusterProviderConfig's credentials.secretRef needs a namespace"},
		"a ServiceAccount named like a team key's account": {`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ServiceAccount
metadata: {name: bad, namespace: e2e-validation}
spec:
  forProvider: {name: crossplane-team-5, scope: team, teamId: 5}
  writeConnectionSecretToRef: {name: s}
`, "names beginning with crossplane-team- are the provider's own"},
	}
	scenariof(t, "every file in examples/ is accepted by the API server (server-side dry run)")
	namespace(t, "team-a", nil) // the examples' namespace; an earlier scenario deleted it
	for _, dir := range []string{"providerconfig", "serviceaccount", "import"} {
		if out, err := kubectlOut(nil, "apply", "--dry-run=server", "-f", filepath.Join(env.root, "examples", dir)); err != nil {
			t.Errorf("examples/%s: %v\n%s", dir, err, out)
		}
	}
	scenariof(t, "a namespaced ProviderConfig may leave its secretRef's namespace out (it is its own)")
	if out, err := kubectlOut([]byte(`apiVersion: terdut.ryuvia.com/v1alpha1
kind: ProviderConfig
metadata: {name: local-ref, namespace: e2e-validation}
spec:
  endpoint: http://127.0.0.1:1
  credentials: {source: Secret, secretRef: {name: k, key: token}}
`), "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("a namespaced ProviderConfig without secretRef.namespace: %v\n%s", err, out)
	}
	scenariof(t, "the API server rejects a change of an MR's providerConfigRef (a tenant must not move an object it observed through its own config onto the platform's)")
	apply(t, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: pinned, namespace: e2e-validation}
spec:
  managementPolicies: [Observe]
  forProvider: {displayName: "Pinned"}
`)
	out, err := kubectlOut(nil, "-n", ns, "patch", "team.terdut.ryuvia.com", "pinned", "--type=merge", "-p", `{"spec":{"providerConfigRef":{"kind":"ProviderConfig","name":"other"}}}`)
	if err == nil || !strings.Contains(out, "spec.providerConfigRef cannot change") {
		t.Errorf("changing a Team's providerConfigRef: %v, %q; want a rejection", err, out)
	}
	if out, err := kubectlOut(nil, "-n", ns, "delete", "team.terdut.ryuvia.com", "pinned", "--wait=false"); err != nil {
		t.Errorf("%v: %s", err, out)
	}
	for name, tc := range cases {
		scenariof(t, "the API server rejects %s", name)
		out, err := kubectlOut([]byte(tc.yaml), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: kubectl apply = %v, %q; want a rejection saying %q", name, err, out, tc.want)
		}
	}
}
