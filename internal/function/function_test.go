package function

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

const serverXR = `{
  "apiVersion": "platform.terdut.ryuvia.com/v1alpha1", "kind": "XTerdutServer",
  "metadata": {"name": "terdut-x7k2p"},
  "spec": {
    "claimRef": {"apiVersion": "platform.terdut.ryuvia.com/v1alpha1", "kind": "TerdutServer", "namespace": "platform-oncall", "name": "terdut"},
    "image": {"repository": "git.ryuvia.com/niklas/terdut-server", "tag": "v0.9.3"},
    "replicas": 0,
    "networking": {"hostname": "", "servicePort": 8080, "gatewayListener": ""},
    "database": {"dsn": "postgres://terdut@db:5432/terdut", "passwordSecretRef": {"name": "terdut-db", "key": "password"}},
    "allowedTeams": {"namespaces": {"from": "All"}},
    "bootstrap": {"username": "admin"},
    "endpoint": "http://127.0.0.1:18090"
  }
}`

// serverXR1 is serverXR with one replica, the claim as written.
var serverXR1 = strings.Replace(serverXR, `"replicas": 0`, `"replicas": 1`, 1)

const teamXR = `{
  "apiVersion": "platform.terdut.ryuvia.com/v1alpha1", "kind": "XTerdutTeam",
  "metadata": {"name": "web-5xq2z"},
  "spec": {
    "claimRef": {"apiVersion": "platform.terdut.ryuvia.com/v1alpha1", "kind": "TerdutTeam", "namespace": "team-a", "name": "web"},
    "serverRef": {"name": "terdut", "namespace": "platform-oncall"},
    "displayName": "Web",
    "integrations": [{"name": "prod-alertmanager", "kind": "alertmanager"}]
  }
}`

func observed(kind, apiVersion, namespace, name, status string) *fnv1.Resource {
	return &fnv1.Resource{Resource: resource.MustStructJSON(`{"apiVersion": "` + apiVersion + `", "kind": "` + kind +
		`", "metadata": {"namespace": "` + namespace + `", "name": "` + name + `"}, "status": ` + status + `}`)}
}

const (
	available   = `{"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}`
	unavailable = `{"conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."}]}`
	mrReady     = `{"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}, {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"}]}`
	usageReady  = `{"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}`
	mrRefused   = `{"conditions": [{"type": "Ready", "status": "False", "reason": "RefNotPermitted", "message": "ClusterProviderConfig \"platform-oncall.terdut\" does not admit namespace \"team-a\""}, {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "namespace \"team-a\" is not admitted"}]}`
)

// bootstrappedServer is what Crossplane observes of a server whose
// bootstrap ServiceAccount (in namespace ns) and Usages are Ready, with the
// Deployment's status deployment.
func bootstrappedServer(ns, deployment string) map[string]*fnv1.Resource {
	return map[string]*fnv1.Resource{
		NameDeployment:      observed("Deployment", "apps/v1", "platform-oncall", "terdut", deployment),
		NameService:         observed("Service", "v1", "platform-oncall", "terdut", `{}`),
		NameServiceAccount:  observed("ServiceAccount", "terdut.ryuvia.com/v1alpha1", ns, "platform-oncall.terdut-instance", mrReady),
		NameDeploymentInUse: observed("Usage", "protection.crossplane.io/v1beta1", ns, "platform-oncall.terdut-instance-uses-deployment", usageReady),
		NameServiceInUse:    observed("Usage", "protection.crossplane.io/v1beta1", ns, "platform-oncall.terdut-instance-uses-service", usageReady),
		NameProviderConfig:  observed("ClusterProviderConfig", "terdut.ryuvia.com/v1alpha1", "", "platform-oncall.terdut", `{}`),
	}
}

func TestRunFunction(t *testing.T) {
	type want struct {
		fatal        string
		bootstrapped string // the Bootstrapped condition's status and reason; "" for none
		resources    map[string]resource.Ready
		status       map[string]any
		summary      string
	}
	cases := map[string]struct {
		reason   string
		xr       string
		input    string
		observed map[string]*fnv1.Resource
		want     want
	}{
		"ServerFirstPass": {
			reason: "nothing exists yet: the bootstrap ServiceAccount is held back until a replica is ready, the summary and Bootstrapped say so",
			xr:     serverXR1,
			want: want{
				resources: map[string]resource.Ready{NameDeployment: resource.ReadyFalse, NameService: resource.ReadyFalse, NameProviderConfig: resource.ReadyFalse},
				status: map[string]any{
					"endpoint": "http://127.0.0.1:18090", "serviceName": "terdut", "providerConfigName": "platform-oncall.terdut",
					"credentialsSecretRef": map[string]any{"namespace": "crossplane-system", "name": "platform-oncall.terdut-instance-credentials", "key": "token"},
				},
				bootstrapped: "False WaitingForReadyReplica",
				summary: "4 of 4 resources not ready: ClusterProviderConfig platform-oncall.terdut: not created yet; Deployment platform-oncall/terdut: not created yet; " +
					"Service platform-oncall/terdut: not created yet; ServiceAccount crossplane-system/platform-oncall.terdut-instance: not created until " +
					"Deployment platform-oncall/terdut has a ready replica (0 of 1 ready), so /api/bootstrap is not called before the server runs",
			},
		},
		"ServerNoReadyReplica": {
			reason: "the Deployment exists but no replica is ready yet: still no ServiceAccount",
			xr:     serverXR1,
			observed: map[string]*fnv1.Resource{
				NameDeployment:     observed("Deployment", "apps/v1", "platform-oncall", "terdut", `{"replicas": 1, "readyReplicas": 0, "conditions": [{"type": "Available", "status": "False"}]}`),
				NameService:        observed("Service", "v1", "platform-oncall", "terdut", `{}`),
				NameProviderConfig: observed("ClusterProviderConfig", "terdut.ryuvia.com/v1alpha1", "", "platform-oncall.terdut", `{}`),
			},
			want: want{
				resources:    map[string]resource.Ready{NameDeployment: resource.ReadyFalse, NameService: resource.ReadyTrue, NameProviderConfig: resource.ReadyTrue},
				bootstrapped: "False WaitingForReadyReplica",
				summary: "2 of 4 resources not ready: Deployment platform-oncall/terdut: Available=False; ServiceAccount crossplane-system/platform-oncall.terdut-instance: not created until " +
					"Deployment platform-oncall/terdut has a ready replica (0 of 1 ready), so /api/bootstrap is not called before the server runs",
			},
		},
		"ServerReadyReplica": {
			reason: "one replica ready: the bootstrap ServiceAccount is composed",
			xr:     serverXR1,
			observed: map[string]*fnv1.Resource{
				NameDeployment:     observed("Deployment", "apps/v1", "platform-oncall", "terdut", `{"replicas": 1, "readyReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}`),
				NameService:        observed("Service", "v1", "platform-oncall", "terdut", `{}`),
				NameProviderConfig: observed("ClusterProviderConfig", "terdut.ryuvia.com/v1alpha1", "", "platform-oncall.terdut", `{}`),
			},
			want: want{
				resources: map[string]resource.Ready{
					NameDeployment: resource.ReadyTrue, NameService: resource.ReadyTrue, NameServiceAccount: resource.ReadyFalse, NameProviderConfig: resource.ReadyTrue,
					NameDeploymentInUse: resource.ReadyFalse, NameServiceInUse: resource.ReadyFalse,
				},
				bootstrapped: "False Waiting",
				summary: "3 of 6 resources not ready: ServiceAccount crossplane-system/platform-oncall.terdut-instance: not created yet; " +
					"Usage crossplane-system/platform-oncall.terdut-instance-uses-deployment: not created yet; Usage crossplane-system/platform-oncall.terdut-instance-uses-service: not created yet",
			},
		},
		"ServerRollingOut": {
			reason:   "a rollout leaves no replica ready for a while: the ServiceAccount composed already stays (leaving it out would delete the instance key)",
			xr:       serverXR1,
			observed: bootstrappedServer("crossplane-system", `{"replicas": 1, "readyReplicas": 0, "conditions": [{"type": "Available", "status": "False"}]}`),
			want: want{
				resources:    map[string]resource.Ready{NameDeployment: resource.ReadyFalse, NameService: resource.ReadyTrue, NameServiceAccount: resource.ReadyTrue, NameProviderConfig: resource.ReadyTrue, NameDeploymentInUse: resource.ReadyTrue, NameServiceInUse: resource.ReadyTrue},
				bootstrapped: "True Available",
				summary:      "1 of 6 resources not ready: Deployment platform-oncall/terdut: Available=False",
			},
		},
		"ServerZeroReplicas": {
			reason: "replicas 0: no server runs, so no bootstrap; the reason says so",
			xr:     serverXR,
			want: want{
				resources:    map[string]resource.Ready{NameDeployment: resource.ReadyFalse, NameService: resource.ReadyFalse, NameProviderConfig: resource.ReadyFalse},
				bootstrapped: "False WaitingForReadyReplica",
				summary: "4 of 4 resources not ready: ClusterProviderConfig platform-oncall.terdut: not created yet; Deployment platform-oncall/terdut: not created yet; " +
					"Service platform-oncall/terdut: not created yet; ServiceAccount crossplane-system/platform-oncall.terdut-instance: not created while replicas is 0 " +
					"(Deployment platform-oncall/terdut): /api/bootstrap needs a running server",
			},
		},
		"ServerDeploymentUnavailable": {
			reason:   "a Deployment is ready when Available, the ServiceAccount when Ready; the input's provider namespace is used",
			xr:       serverXR,
			input:    `{"apiVersion": "function.terdut.ryuvia.com/v1alpha1", "kind": "Input", "providerNamespace": "terdut-system"}`,
			observed: bootstrappedServer("terdut-system", unavailable),
			want: want{
				resources: map[string]resource.Ready{NameDeployment: resource.ReadyFalse, NameService: resource.ReadyTrue, NameServiceAccount: resource.ReadyTrue, NameProviderConfig: resource.ReadyTrue, NameDeploymentInUse: resource.ReadyTrue, NameServiceInUse: resource.ReadyTrue},
				status: map[string]any{
					"endpoint": "http://127.0.0.1:18090", "serviceName": "terdut", "providerConfigName": "platform-oncall.terdut",
					"credentialsSecretRef": map[string]any{"namespace": "terdut-system", "name": "platform-oncall.terdut-instance-credentials", "key": "token"},
				},
				bootstrapped: "True Available",
				summary:      "1 of 6 resources not ready: Deployment platform-oncall/terdut: Available=False MinimumReplicasUnavailable: Deployment does not have minimum availability.",
			},
		},
		"ServerReady": {
			reason:   "everything observed ready",
			xr:       serverXR,
			observed: bootstrappedServer("crossplane-system", available),
			want: want{
				resources:    map[string]resource.Ready{NameDeployment: resource.ReadyTrue, NameService: resource.ReadyTrue, NameServiceAccount: resource.ReadyTrue, NameProviderConfig: resource.ReadyTrue, NameDeploymentInUse: resource.ReadyTrue, NameServiceInUse: resource.ReadyTrue},
				summary:      "all 6 resources ready",
				bootstrapped: "True Available",
			},
		},
		"TeamRefused": {
			reason: "a Team its server refuses reports why (Synced) in the summary; no team ID yet",
			xr:     teamXR,
			observed: map[string]*fnv1.Resource{
				NameTeam: observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", mrRefused),
			},
			want: want{
				resources: map[string]resource.Ready{NameTeam: resource.ReadyFalse, "integration-prod-alertmanager": resource.ReadyFalse},
				status: map[string]any{
					"providerConfig": "ClusterProviderConfig/platform-oncall.terdut",
					"webhookSecrets": []any{"web-prod-alertmanager-webhook"},
				},
				summary: `2 of 2 resources not ready: Integration team-a/web-prod-alertmanager: not created yet; Team team-a/web: Synced=False ReconcileError: namespace "team-a" is not admitted`,
			},
		},
		"TeamReady": {
			reason: "the Team's server-side ID reaches the claim",
			xr:     teamXR,
			observed: map[string]*fnv1.Resource{
				NameTeam:                        observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", `{"atProvider": {"id": 42}, "conditions": [{"type": "Ready", "status": "True"}]}`),
				"integration-prod-alertmanager": observed("Integration", "terdut.ryuvia.com/v1alpha1", "team-a", "web-prod-alertmanager", mrReady),
			},
			want: want{
				resources: map[string]resource.Ready{NameTeam: resource.ReadyTrue, "integration-prod-alertmanager": resource.ReadyTrue},
				status:    map[string]any{"teamId": float64(42)},
				summary:   "all 2 resources ready",
			},
		},
		"TeamAlone": {
			reason: "one resource, not ready yet: the summary reads right",
			xr:     strings.Replace(teamXR, `"integrations": [{"name": "prod-alertmanager", "kind": "alertmanager"}]`, `"oidc": {"memberGroup": "web"}`, 1),
			want: want{
				resources: map[string]resource.Ready{NameTeam: resource.ReadyFalse},
				summary:   "1 of 1 resource not ready: Team team-a/web: not created yet",
			},
		},
		"NoClaim": {
			reason: "an XR made directly has no namespace for its resources: a clear error",
			xr:     strings.Replace(teamXR, `"claimRef"`, `"notClaimRef"`, 1),
			want:   want{fatal: `XTerdutTeam "web-5xq2z" has no claim: create it as a TerdutTeam in a namespace`},
		},
		"BadInput": {
			reason: "a provider namespace that is no namespace name is refused",
			xr:     serverXR,
			input:  `{"apiVersion": "function.terdut.ryuvia.com/v1alpha1", "kind": "Input", "providerNamespace": "Crossplane System"}`,
			want:   want{fatal: `the provider namespace "Crossplane System" in the function's input is not a valid namespace name`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(tc.xr)}, Resources: tc.observed},
				Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(tc.xr)}},
			}
			if tc.input != "" {
				req.Input = resource.MustStructJSON(tc.input)
			}
			rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction: %v", tc.reason, err)
			}
			var fatal string
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					fatal = r.GetMessage()
				}
			}
			if tc.want.fatal != "" || fatal != "" {
				if !strings.Contains(fatal, tc.want.fatal) || tc.want.fatal == "" {
					t.Errorf("%s\nfatal result %q, want one containing %q", tc.reason, fatal, tc.want.fatal)
				}
				return
			}
			got := map[string]resource.Ready{}
			for n, r := range rsp.GetDesired().GetResources() {
				switch r.GetReady() {
				case fnv1.Ready_READY_TRUE:
					got[n] = resource.ReadyTrue
				case fnv1.Ready_READY_FALSE:
					got[n] = resource.ReadyFalse
				default:
					got[n] = resource.ReadyUnspecified
				}
			}
			if diff := cmp.Diff(tc.want.resources, got); diff != "" {
				t.Errorf("%s\ndesired resources and readiness: -want, +got:\n%s", tc.reason, diff)
			}
			st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
			if st["summary"] != tc.want.summary {
				t.Errorf("%s\nsummary:\n got %q\nwant %q", tc.reason, st["summary"], tc.want.summary)
			}
			cond := ""
			for _, c := range rsp.GetConditions() {
				if c.GetType() == TypeBootstrapped && c.GetTarget() == fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
					cond = strings.TrimPrefix(c.GetStatus().String(), "STATUS_CONDITION_") + " " + c.GetReason()
					cond = strings.Replace(cond, "TRUE", "True", 1)
					cond = strings.Replace(cond, "FALSE", "False", 1)
				}
			}
			if cond != tc.want.bootstrapped {
				t.Errorf("%s\nBootstrapped condition on composite and claim: %q, want %q", tc.reason, cond, tc.want.bootstrapped)
			}
			for k, v := range tc.want.status {
				if diff := cmp.Diff(v, st[k]); diff != "" {
					t.Errorf("%s\nstatus.%s: -want, +got:\n%s", tc.reason, k, diff)
				}
			}
		})
	}
}

// The composed resources carry no status and no zero values the function
// has no opinion on: Crossplane's server-side apply would own them.
func TestDesiredIsPruned(t *testing.T) {
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(serverXR)}},
		Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(serverXR)}},
	}
	rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	d := rsp.GetDesired().GetResources()[NameDeployment].GetResource().AsMap()
	if _, ok := d["status"]; ok {
		t.Error("the desired Deployment has a status")
	}
	c := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	probe := c["livenessProbe"].(map[string]any)
	for _, f := range []string{"successThreshold", "timeoutSeconds"} {
		if _, ok := probe[f]; ok {
			t.Errorf("the liveness probe sets %s: %v", f, probe[f])
		}
	}
	if _, ok := d["metadata"].(map[string]any)["creationTimestamp"]; ok {
		t.Error("the desired Deployment sets metadata.creationTimestamp")
	}
	if got := d["spec"].(map[string]any)["replicas"]; got != float64(0) {
		t.Errorf("replicas: %v, want 0 (set, even though zero)", got)
	}
}

func TestDatabaseReady(t *testing.T) {
	zalando := strings.Replace(serverXR, `"dsn": "postgres://terdut@db:5432/terdut", "passwordSecretRef": {"name": "terdut-db", "key": "password"}`,
		`"postgresClusterRef": {"name": "terdut-postgres", "user": "terdut", "database": "terdut"}`, 1)
	cluster := func(status string) *fnv1.Resources {
		return &fnv1.Resources{Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "acid.zalan.do/v1", "kind": "postgresql",
			"metadata": {"namespace": "platform-oncall", "name": "terdut-postgres"}, "status": {"PostgresClusterStatus": "` + status + `"}}`)}}}
	}
	crd := &fnv1.Resources{Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "postgresqls.acid.zalan.do"}}`)}}}
	withCRD := func(cluster *fnv1.Resources) map[string]*fnv1.Resources {
		return map[string]*fnv1.Resources{requiredPostgresCRD: crd, requiredPostgres: cluster}
	}
	cases := map[string]struct {
		reason      string
		xr          string
		required    map[string]*fnv1.Resources
		observed    map[string]*fnv1.Resource
		wantRequire bool
		want        string
	}{
		"FirstPass": {
			reason: "the CRD is asked for first; until Crossplane has read it, the condition is Unknown",
			xr:     zalando,
			want:   "STATUS_CONDITION_UNKNOWN Waiting: reading postgresql platform-oncall/terdut-postgres",
		},
		"NoCRD": {
			reason:   "without postgres-operator's CRD the claim says so (and asks for no postgresql, which could not be read)",
			xr:       zalando,
			required: map[string]*fnv1.Resources{requiredPostgresCRD: {}},
			want: "STATUS_CONDITION_FALSE PostgresOperatorNotInstalled: database.postgresClusterRef names postgresql platform-oncall/terdut-postgres, " +
				"but the CRD postgresqls.acid.zalan.do is not installed: install Zalando's postgres-operator, or use database.dsn",
		},
		"CRDRead": {
			reason:   "with the CRD there, the cluster is asked for; until Crossplane has read it, the condition is Unknown",
			xr:       zalando,
			required: map[string]*fnv1.Resources{requiredPostgresCRD: crd}, wantRequire: true,
			want: "STATUS_CONDITION_UNKNOWN Waiting: reading postgresql platform-oncall/terdut-postgres",
		},
		"NotFound": {
			reason:   "a cluster that does not exist is named",
			xr:       zalando,
			required: withCRD(&fnv1.Resources{}), wantRequire: true,
			want: "STATUS_CONDITION_FALSE NotFound: postgresql platform-oncall/terdut-postgres does not exist: create the cluster, or fix database.postgresClusterRef",
		},
		"Creating": {
			reason:   "a cluster the operator is still creating is not ready",
			xr:       zalando,
			required: withCRD(cluster("Creating")), wantRequire: true,
			want: "STATUS_CONDITION_FALSE ClusterNotRunning: postgresql platform-oncall/terdut-postgres is Creating",
		},
		"Running": {
			reason:   "a Running cluster is ready",
			xr:       zalando,
			required: withCRD(cluster("Running")), wantRequire: true,
			want: "STATUS_CONDITION_TRUE Running: postgresql platform-oncall/terdut-postgres is Running",
		},
		"DSN": {
			reason: "a dsn of the owner's own is checked by terdut-server's readiness probe: nothing asked, and DatabaseReady waits for the Deployment",
			xr:     serverXR,
			want:   "STATUS_CONDITION_UNKNOWN WaitingForServer: the database at database.dsn is checked by terdut-server's readiness probe; Deployment platform-oncall/terdut: not created yet",
		},
		"DSNServerAvailable": {
			reason:   "with the Deployment Available, a dsn's database is ready",
			xr:       serverXR,
			observed: map[string]*fnv1.Resource{"deployment": {Resource: resource.MustStructJSON(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "platform-oncall", "name": "terdut"}, "status": {"conditions": [{"type": "Available", "status": "True"}]}}`)}},
			want:     "STATUS_CONDITION_TRUE ServerReady: terdut-server's readiness probe reaches the database at database.dsn (Deployment platform-oncall/terdut is Available)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{
				Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(tc.xr)}, Resources: tc.observed},
				Desired:           &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(tc.xr)}},
				RequiredResources: tc.required,
			}
			rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			sel, asked := rsp.GetRequirements().GetResources()[requiredPostgres]
			if asked != tc.wantRequire || (asked && (sel.GetKind() != "postgresql" || sel.GetNamespace() != "platform-oncall" || sel.GetMatchName() != "terdut-postgres")) {
				t.Errorf("%s\nrequirement: %v (asked %t), want asked %t for postgresql platform-oncall/terdut-postgres", tc.reason, sel, asked, tc.wantRequire)
			}
			got := ""
			for _, c := range rsp.GetConditions() {
				if c.GetType() == TypeDatabaseReady {
					got = c.GetStatus().String() + " " + c.GetReason() + ": " + c.GetMessage()
				}
			}
			if got != tc.want {
				t.Errorf("%s\nDatabaseReady:\n got %q\nwant %q", tc.reason, got, tc.want)
			}
		})
	}
}

// The claim's Composed condition carries the reason of the resource that
// holds it back, and a failing one is also a warning event.
func TestComposedCondition(t *testing.T) {
	cases := map[string]struct {
		xr       string
		observed map[string]*fnv1.Resource
		want     string // condition status and reason
		warning  string // the warning result's reason; "" for none
	}{
		"RefusedTeam": {
			xr:       teamXR,
			observed: map[string]*fnv1.Resource{NameTeam: observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", mrRefused)},
			want:     "False RefNotPermitted",
			warning:  "RefNotPermitted",
		},
		"RefusedTeamBeforeItsChildren": {
			// The children fail too, as a consequence (their reference to
			// the refused Team never resolves): the condition names the
			// cause, the Team, although the children sort first by name.
			xr: teamXR,
			observed: map[string]*fnv1.Resource{
				NameTeam:                        observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", mrRefused),
				"integration-prod-alertmanager": observed("Integration", "terdut.ryuvia.com/v1alpha1", "team-a", "web-prod-alertmanager", `{"conditions": [{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "cannot resolve references: referenced field was empty"}]}`),
			},
			want:    "False RefNotPermitted",
			warning: "RefNotPermitted",
		},
		"WaitingDeployment": {
			xr: serverXR1,
			observed: map[string]*fnv1.Resource{
				NameDeployment:     observed("Deployment", "apps/v1", "platform-oncall", "terdut", unavailable),
				NameService:        observed("Service", "v1", "platform-oncall", "terdut", `{}`),
				NameProviderConfig: observed("ClusterProviderConfig", "terdut.ryuvia.com/v1alpha1", "", "platform-oncall.terdut", `{}`),
			},
			want: "False MinimumReplicasUnavailable",
		},
		"HeldBootstrap": {
			xr: serverXR1,
			observed: map[string]*fnv1.Resource{
				NameDeployment:     observed("Deployment", "apps/v1", "platform-oncall", "terdut", `{"replicas": 1, "readyReplicas": 0, "conditions": [{"type": "Available", "status": "True"}]}`),
				NameService:        observed("Service", "v1", "platform-oncall", "terdut", `{}`),
				NameProviderConfig: observed("ClusterProviderConfig", "terdut.ryuvia.com/v1alpha1", "", "platform-oncall.terdut", `{}`),
			},
			want: "False WaitingForReadyReplica",
		},
		"AllReady": {
			xr: teamXR,
			observed: map[string]*fnv1.Resource{
				NameTeam:                        observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", `{"atProvider": {"id": 42}, "conditions": [{"type": "Ready", "status": "True"}]}`),
				"integration-prod-alertmanager": observed("Integration", "terdut.ryuvia.com/v1alpha1", "team-a", "web-prod-alertmanager", mrReady),
			},
			want: "True AllReady",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(tc.xr)}, Resources: tc.observed},
				Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(tc.xr)}},
			}
			rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, c := range rsp.GetConditions() {
				if c.GetType() == TypeComposed && c.GetTarget() == fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
					got = strings.TrimPrefix(c.GetStatus().String(), "STATUS_CONDITION_") + " " + c.GetReason()
				}
			}
			want := strings.ToUpper(strings.Fields(tc.want)[0]) + " " + strings.Fields(tc.want)[1]
			if got != want {
				t.Errorf("Composed condition %q, want %q", got, want)
			}
			warning := ""
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && r.GetTarget() == fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
					warning = r.GetReason()
				}
			}
			if warning != tc.warning {
				t.Errorf("warning event reason %q, want %q", warning, tc.warning)
			}
		})
	}
}

// The claim's keyRotation reaches the bootstrap ServiceAccount (an interval,
// and a request that rotates the instance key now), and the claim reports
// when the key rotates next.
func TestServerKeyRotation(t *testing.T) {
	xr := strings.Replace(serverXR, `"bootstrap": {"username": "admin"},`, `"bootstrap": {"username": "admin"}, "keyRotation": {"interval": "24h", "rotationRequest": "2026-12-05"},`, 1)
	req := &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)}, Resources: map[string]*fnv1.Resource{
			NameDeployment:     observed("Deployment", "apps/v1", "platform-oncall", "terdut", available),
			NameServiceAccount: observed("ServiceAccount", "terdut.ryuvia.com/v1alpha1", "crossplane-system", "platform-oncall.terdut-instance", `{"atProvider": {"nextRotationAt": "2026-12-06T10:00:00Z", "lastRotationRequest": "2026-12-05"}, "conditions": [{"type": "Ready", "status": "True"}]}`),
		}},
		Desired: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)}},
	}
	rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	sa := rsp.GetDesired().GetResources()[NameServiceAccount].GetResource().AsMap()
	kr := sa["spec"].(map[string]any)["forProvider"].(map[string]any)["keyRotation"]
	if diff := cmp.Diff(map[string]any{"interval": "24h0m0s", "rotationRequest": "2026-12-05"}, kr); diff != "" {
		t.Errorf("the ServiceAccount's keyRotation: -want, +got:\n%s", diff)
	}
	st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
	if diff := cmp.Diff(map[string]any{"nextRotationAt": "2026-12-06T10:00:00Z", "lastRotationRequest": "2026-12-05"}, st["keyRotation"]); diff != "" {
		t.Errorf("status.keyRotation: -want, +got:\n%s", diff)
	}
}

// A rotation of the Zalando cluster's credentials Secret is detected and
// reported until the server's pods restart (a rotation is reported, not acted on); the password itself is
// never shown.
func TestDatabaseCredentialsRotation(t *testing.T) {
	const secret = "terdut.terdut-postgres.credentials.postgresql.acid.zalan.do"
	xr := func(status string) string {
		x := strings.Replace(serverXR, `"dsn": "postgres://terdut@db:5432/terdut", "passwordSecretRef": {"name": "terdut-db", "key": "password"}`,
			`"postgresClusterRef": {"name": "terdut-postgres", "user": "terdut", "database": "terdut"}`, 1)
		x = strings.Replace(x, `"metadata": {"name": "terdut-x7k2p"}`, `"metadata": {"name": "terdut-x7k2p", "uid": "6c1c0d52"}`, 1)
		if status != "" {
			x = strings.TrimSuffix(strings.TrimSpace(x), "}") + `, "status": ` + status + `}`
		}
		return x
	}
	required := func(password string) map[string]*fnv1.Resources {
		r := map[string]*fnv1.Resources{
			requiredPostgresCRD: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "postgresqls.acid.zalan.do"}}`)}}},
			requiredPostgres:    {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "acid.zalan.do/v1", "kind": "postgresql", "metadata": {"namespace": "platform-oncall", "name": "terdut-postgres"}, "status": {"PostgresClusterStatus": "Running"}}`)}}},
			requiredCredentials: {},
		}
		if password != "" {
			r[requiredCredentials] = &fnv1.Resources{Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "platform-oncall", "name": "` + secret +
				`"}, "data": {"username": "dGVyZHV0", "password": "` + password + `"}}`)}}}
		}
		return r
	}
	deployment := func(gen, observedGen, updated int) map[string]*fnv1.Resource {
		return map[string]*fnv1.Resource{NameDeployment: {Resource: resource.MustStructJSON(fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "platform-oncall", "name": "terdut", "generation": %d},
			"spec": {"replicas": 1}, "status": {"observedGeneration": %d, "replicas": 1, "updatedReplicas": %d, "availableReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}}`, gen, observedGen, updated))}}
	}
	// The fingerprint of password "b2xk" ("old") for this composite.
	first := func(t *testing.T) string {
		t.Helper()
		rsp := run(t, xr(""), required("b2xk"), deployment(1, 1, 1))
		db, _ := rsp["status"].(map[string]any)["database"].(map[string]any)
		fp, _ := db["credentialsFingerprint"].(string)
		if len(fp) != 16 {
			t.Fatalf("status.database %v: want a 16-hex-digit fingerprint", db)
		}
		return fp
	}
	fp := first(t)
	changed := `{"database": {"credentialsSecret": "` + secret + `", "credentialsFingerprint": "` + fp + `", "credentialsChangedAt": "2026-12-05T11:00:00Z", "changedAtGeneration": 1}}`
	cases := map[string]struct {
		status   string
		password string
		deploy   map[string]*fnv1.Resource
		want     string // DatabaseCredentials status and reason
		warning  bool
		changed  string // status.database.credentialsChangedAt
	}{
		"FirstSight": {password: "b2xk", deploy: deployment(1, 1, 1), want: "TRUE Current"},
		"Unchanged": {
			status:   `{"database": {"credentialsSecret": "` + secret + `", "credentialsFingerprint": "` + fp + `"}}`,
			password: "b2xk", deploy: deployment(1, 1, 1), want: "TRUE Current",
		},
		"Rotated": {
			status:   `{"database": {"credentialsSecret": "` + secret + `", "credentialsFingerprint": "` + fp + `"}}`,
			password: "bmV3", deploy: deployment(1, 1, 1), want: "FALSE CredentialsRotated", warning: true, changed: "2026-12-05T12:00:00Z",
		},
		"StillOldPods": {
			status: changed, password: "b2xk", deploy: deployment(1, 1, 1), want: "FALSE CredentialsRotated", warning: true, changed: "2026-12-05T11:00:00Z",
		},
		"RollingOut": {
			status: changed, password: "b2xk", deploy: deployment(2, 2, 0), want: "FALSE CredentialsRotated", warning: true, changed: "2026-12-05T11:00:00Z",
		},
		"Restarted": {
			status: changed, password: "b2xk", deploy: deployment(2, 2, 1), want: "TRUE Current",
		},
		"NoSecret": {deploy: deployment(1, 1, 1), want: "FALSE SecretNotFound"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := runResponse(t, xr(tc.status), required(tc.password), tc.deploy)
			got, msg, warning := "", "", false
			for _, c := range rsp.GetConditions() {
				if c.GetType() == TypeDatabaseCredentials {
					got, msg = strings.TrimPrefix(c.GetStatus().String(), "STATUS_CONDITION_")+" "+c.GetReason(), c.GetMessage()
				}
			}
			for _, r := range rsp.GetResults() {
				warning = warning || (r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && r.GetReason() == "CredentialsRotated")
			}
			if got != tc.want || warning != tc.warning {
				t.Errorf("DatabaseCredentials %q (%s), warning %t; want %q, warning %t", got, msg, warning, tc.want, tc.warning)
			}
			if strings.Contains(msg, "b2xk") || strings.Contains(msg, "bmV3") {
				t.Errorf("the message shows the password: %s", msg)
			}
			st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
			db, _ := st["database"].(map[string]any)
			if c, _ := db["credentialsChangedAt"].(string); c != tc.changed {
				t.Errorf("status.database.credentialsChangedAt %q, want %q", c, tc.changed)
			}
		})
	}
}

// testNow is the function's clock in runResponse.
func testNow() time.Time { return time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC) }

// runResponse runs the function on xr with required and observed resources.
func runResponse(t *testing.T, xr string, required map[string]*fnv1.Resources, obs map[string]*fnv1.Resource) *fnv1.RunFunctionResponse {
	t.Helper()
	req := &fnv1.RunFunctionRequest{
		Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)}, Resources: obs},
		Desired:           &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)}},
		RequiredResources: required,
	}
	rsp, err := (&Function{Log: logging.NewNopLogger(), Now: testNow}).RunFunction(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("fatal: %s", r.GetMessage())
		}
	}
	return rsp
}

// run is runResponse's desired composite.
func run(t *testing.T, xr string, required map[string]*fnv1.Resources, obs map[string]*fnv1.Resource) map[string]any {
	t.Helper()
	return runResponse(t, xr, required, obs).GetDesired().GetComposite().GetResource().AsMap()
}
