package function

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/teamkey"
)

func TestTeamProviderConfig(t *testing.T) {
	n := TeamNames{Namespace: "team-a", Name: "web"}
	cases := map[string]struct {
		reason string
		spec   platform.XTerdutTeamSpec
		want   xpv2.ProviderConfigReference
	}{
		"ServerRefOtherNamespace": {
			reason: "a serverRef names the ClusterProviderConfig its TerdutServer composes",
			spec:   platform.XTerdutTeamSpec{ServerRef: &platform.ServerRef{Name: "terdut", Namespace: "platform-oncall"}},
			want:   xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "platform-oncall.terdut"},
		},
		"ServerRefOwnNamespace": {
			reason: "a serverRef without a namespace means the team's own",
			spec:   platform.XTerdutTeamSpec{ServerRef: &platform.ServerRef{Name: "terdut"}},
			want:   xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "team-a.terdut"},
		},
		"ProviderConfigRef": {
			reason: "a providerConfigRef is used as given",
			spec:   platform.XTerdutTeamSpec{ProviderConfigRef: &platform.ProviderConfigRef{Kind: "ProviderConfig", Name: "mine"}},
			want:   xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "mine"},
		},
		"Neither": {
			reason: "without either, the ClusterProviderConfig default",
			want:   xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(&tc.want, TeamProviderConfig(n, &tc.spec)); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTeam(t *testing.T) {
	n := TeamNames{Namespace: "team-a", Name: "web"}
	levels := []v1alpha1.EscalationLevel{
		{Timeout: "5m", Targets: []v1alpha1.EscalationTarget{{Kind: "oncall"}}},
		{Timeout: "15m", Targets: []v1alpha1.EscalationTarget{{Kind: "user", Username: "alice"}}},
	}
	spec := &platform.XTerdutTeamSpec{
		ServerRef:        &platform.ServerRef{Name: "terdut", Namespace: "platform-oncall"},
		DisplayName:      "Web",
		OIDC:             &v1alpha1.TeamOIDC{MemberGroup: "web-members", OwnerGroup: "web-owners"},
		EscalationPolicy: &platform.EscalationPolicy{RepeatCount: 2, FallbackTopic: "web-oncall", Levels: levels},
		DeadmanSwitches:  []platform.DeadmanSwitch{{Name: "prod-watchdog", Matcher: "alertname=Watchdog,cluster=prod", Timeout: "15m", Severity: "critical"}},
		Integrations:     []platform.Integration{{Name: "prod-alertmanager", Kind: "alertmanager"}, {Name: "grafana", Kind: "grafana"}},
	}
	pc := func() xpv2.ManagedResourceSpec {
		return xpv2.ManagedResourceSpec{ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "platform-oncall.terdut"}}
	}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: kind}
	}
	om := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "team-a", Name: name} }
	ref := &xpv2.Reference{Name: "web"}
	integration := func(name, kind string) *v1alpha1.Integration {
		ms := pc()
		ms.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "web-" + name + "-webhook"}
		return &v1alpha1.Integration{TypeMeta: tm("Integration"), ObjectMeta: om("web-" + name), Spec: v1alpha1.IntegrationSpec{
			ManagedResourceSpec: ms, ForProvider: v1alpha1.IntegrationParameters{TeamIDRef: ref, Kind: kind, Name: name},
		}}
	}
	want := []Composed{
		{Name: "team", Object: &v1alpha1.Team{TypeMeta: tm("Team"), ObjectMeta: om("web"), Spec: v1alpha1.TeamSpec{
			ManagedResourceSpec: pc(), ForProvider: v1alpha1.TeamParameters{DisplayName: "Web", OIDC: &v1alpha1.TeamOIDC{MemberGroup: "web-members", OwnerGroup: "web-owners"}},
		}}},
		{Name: "escalation-policy", Object: &v1alpha1.EscalationPolicy{TypeMeta: tm("EscalationPolicy"), ObjectMeta: om("web"), Spec: v1alpha1.EscalationPolicySpec{
			ManagedResourceSpec: pc(), ForProvider: v1alpha1.EscalationPolicyParameters{TeamIDRef: ref, RepeatCount: 2, FallbackTopic: "web-oncall", Levels: levels},
		}}},
		{Name: "switch-prod-watchdog", Object: &v1alpha1.DeadmanSwitch{TypeMeta: tm("DeadmanSwitch"), ObjectMeta: om("web-prod-watchdog"), Spec: v1alpha1.DeadmanSwitchSpec{
			ManagedResourceSpec: pc(), ForProvider: v1alpha1.DeadmanSwitchParameters{TeamIDRef: ref, Name: "prod-watchdog", Matcher: "alertname=Watchdog,cluster=prod", Timeout: "15m", Severity: "critical"},
		}}},
		{Name: "integration-prod-alertmanager", Object: integration("prod-alertmanager", "alertmanager")},
		{Name: "integration-grafana", Object: integration("grafana", "grafana")},
	}
	if diff := cmp.Diff(want, Team(n, spec)); diff != "" {
		t.Errorf("Team(...): -want, +got:\n%s", diff)
	}
	st := TeamStatus(n, spec)
	wantSt := platform.XTerdutTeamStatus{ProviderConfig: "ClusterProviderConfig/platform-oncall.terdut", WebhookSecrets: []string{"web-prod-alertmanager-webhook", "web-grafana-webhook"}}
	if diff := cmp.Diff(wantSt, st); diff != "" {
		t.Errorf("TeamStatus(...): -want, +got:\n%s", diff)
	}

	// A team alone composes only its Team.
	if got := Team(n, &platform.XTerdutTeamSpec{DisplayName: "Solo"}); len(got) != 1 || got[0].Name != NameTeam {
		t.Errorf("a team without policy, switches or integrations composed %d resources, want only the Team", len(got))
	}
}

// A TerdutTeam tells its owner where its server is and where the key its
// resources use lives, read from its provider config.
func TestTeamServerStatus(t *testing.T) {
	cpc := func(spec string) map[string]*fnv1.Resources {
		return map[string]*fnv1.Resources{requiredProviderConfig: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(
			`{"apiVersion": "terdut.ryuvia.com/v1alpha1", "kind": "ClusterProviderConfig", "metadata": {"name": "platform-oncall.terdut"}, "spec": ` + spec + `}`)}}}}
	}
	teamObserved := map[string]*fnv1.Resource{NameTeam: observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", `{"atProvider": {"id": 42}, "conditions": [{"type": "Ready", "status": "True"}]}`)}
	const endpoint = "http://terdut.platform-oncall.svc:8080"
	cases := map[string]struct {
		required map[string]*fnv1.Resources
		observed map[string]*fnv1.Resource
		want     map[string]any
	}{
		"NotReadYet": {
			observed: teamObserved,
			want:     map[string]any{"teamId": float64(42)},
		},
		"TeamScoped": {
			required: cpc(`{"endpoint": "` + endpoint + `", "credentials": {"source": "Secret", "secretRef": {"namespace": "crossplane-system", "name": "platform-oncall.terdut-instance-credentials", "key": "token"}}}`),
			observed: teamObserved,
			want: map[string]any{"teamId": float64(42), "serverEndpoint": endpoint, "credentialsSecretRef": map[string]any{
				"namespace": "crossplane-system", "key": "token",
				"name": teamkey.SecretName("ClusterProviderConfig/platform-oncall.terdut", endpoint, 42),
			}},
		},
		"NoTeamIDYet": {
			required: cpc(`{"endpoint": "` + endpoint + `", "credentials": {"source": "Secret"}}`),
			want:     map[string]any{"serverEndpoint": endpoint},
		},
		"ConfigKey": {
			required: cpc(`{"endpoint": "` + endpoint + `", "teamScopedCredentials": false, "credentials": {"source": "Secret", "secretRef": {"namespace": "crossplane-system", "name": "instance", "key": "token"}}}`),
			observed: teamObserved,
			want: map[string]any{"teamId": float64(42), "serverEndpoint": endpoint, "credentialsSecretRef": map[string]any{
				"namespace": "crossplane-system", "name": "instance", "key": "token",
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{
				Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(teamXR)}, Resources: tc.observed},
				Desired:           &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(teamXR)}},
				RequiredResources: tc.required,
			}
			rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			sel := rsp.GetRequirements().GetResources()[requiredProviderConfig]
			if sel.GetKind() != "ClusterProviderConfig" || sel.GetMatchName() != "platform-oncall.terdut" {
				t.Errorf("asks for %s %q, want ClusterProviderConfig platform-oncall.terdut", sel.GetKind(), sel.GetMatchName())
			}
			st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
			for _, k := range []string{"teamId", "serverEndpoint", "credentialsSecretRef"} {
				if diff := cmp.Diff(tc.want[k], st[k]); diff != "" {
					t.Errorf("status.%s: -want, +got:\n%s", k, diff)
				}
			}
		})
	}
}

// A team holds its server while it exists: the ClusterUsage names the
// XTerdutServer that composed the team's provider config, and the team's
// own composite as its user. A provider config no server composed holds
// nothing, and neither does a team the server's config does not admit (its
// Team never held a team there): else any tenant could block the deletion of
// any server by naming it.
func TestTeamHoldsServer(t *testing.T) {
	cpc := func(owner string) map[string]*fnv1.Resources {
		return map[string]*fnv1.Resources{requiredProviderConfig: {Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(
			`{"apiVersion": "terdut.ryuvia.com/v1alpha1", "kind": "ClusterProviderConfig", "metadata": {"name": "platform-oncall.terdut", "ownerReferences": ` + owner +
				`}, "spec": {"endpoint": "http://terdut.platform-oncall.svc:8080", "credentials": {"source": "Secret"}}}`)}}}}
	}
	withAccount := func(m map[string]*fnv1.Resources) map[string]*fnv1.Resources {
		m[requiredServerAccount] = &fnv1.Resources{Items: []*fnv1.Resource{observed("ServiceAccount", "terdut.ryuvia.com/v1alpha1", "crossplane-system", "platform-oncall.terdut-instance", mrReady)}}
		return m
	}
	byServer := `[{"apiVersion": "platform.terdut.ryuvia.com/v1alpha1", "kind": "XTerdutServer", "name": "terdut-x7k2p", "uid": "u1", "controller": true}]`
	account := `"of":{"apiVersion":"terdut.ryuvia.com/v1alpha1","kind":"ServiceAccount","resourceRef":{"name":"platform-oncall.terdut-instance","namespace":"crossplane-system"}},"replayDeletion":true}`
	admitted := map[string]*fnv1.Resource{NameTeam: observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", `{"atProvider": {"id": 42}, "conditions": [{"type": "Ready", "status": "True"}]}`)}
	cases := map[string]struct {
		required map[string]*fnv1.Resources
		// refused: the Team is refused (RefNotPermitted) and holds no
		// team; otherwise it holds team 42.
		refused  bool
		want     string            // the ClusterUsage's spec as JSON; "" for none
		accounts map[string]string // the MRs' Usages of the server's ServiceAccount: namespace/name to spec
	}{
		"NotAdmitted": {
			required: withAccount(cpc(byServer)),
			refused:  true,
		},
		"ComposedByServerBootstrapped": {
			required: withAccount(cpc(byServer)),
			want: `{"by":{"apiVersion":"platform.terdut.ryuvia.com/v1alpha1","kind":"XTerdutTeam","resourceRef":{"name":"web-5xq2z"}},` +
				`"of":{"apiVersion":"platform.terdut.ryuvia.com/v1alpha1","kind":"XTerdutServer","resourceRef":{"name":"terdut-x7k2p"}},"replayDeletion":true}`,
			accounts: map[string]string{
				"team-a/team.web-uses-server":                          `{"by":{"apiVersion":"terdut.ryuvia.com/v1alpha1","kind":"Team","resourceRef":{"name":"web"}},` + account,
				"team-a/integration.web-prod-alertmanager-uses-server": `{"by":{"apiVersion":"terdut.ryuvia.com/v1alpha1","kind":"Integration","resourceRef":{"name":"web-prod-alertmanager"}},` + account,
			},
		},
		"ComposedByServer": {
			required: cpc(byServer),
			want: `{"by":{"apiVersion":"platform.terdut.ryuvia.com/v1alpha1","kind":"XTerdutTeam","resourceRef":{"name":"web-5xq2z"}},` +
				`"of":{"apiVersion":"platform.terdut.ryuvia.com/v1alpha1","kind":"XTerdutServer","resourceRef":{"name":"terdut-x7k2p"}},"replayDeletion":true}`,
		},
		"NotComposed": {
			required: cpc(`[]`),
		},
		"NotOwnedAsController": {
			required: cpc(`[{"apiVersion": "platform.terdut.ryuvia.com/v1alpha1", "kind": "XTerdutServer", "name": "terdut-x7k2p", "uid": "u1"}]`),
		},
		"ConfigNotReadYet": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obs := admitted
			if tc.refused {
				obs = map[string]*fnv1.Resource{NameTeam: observed("Team", "terdut.ryuvia.com/v1alpha1", "team-a", "web", mrRefused)}
			}
			req := &fnv1.RunFunctionRequest{
				Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(teamXR)}, Resources: obs},
				Desired:           &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(teamXR)}},
				RequiredResources: tc.required,
			}
			rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if u := rsp.GetDesired().GetResources()[NameServerInUse]; u != nil {
				m := u.GetResource().AsMap()
				if m["kind"] != "ClusterUsage" || m["metadata"].(map[string]any)["name"] != "terdutteam.team-a.web" {
					t.Errorf("composed %v %v, want ClusterUsage terdutteam.team-a.web", m["kind"], m["metadata"])
				}
				b, _ := json.Marshal(m["spec"])
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("ClusterUsage spec:\n got %s\nwant %s", got, tc.want)
			}
			accounts := map[string]string{}
			for name, r := range rsp.GetDesired().GetResources() {
				if !strings.HasPrefix(name, prefixAccountInUse) {
					continue
				}
				m := r.GetResource().AsMap()
				meta := m["metadata"].(map[string]any)
				b, err := json.Marshal(m["spec"])
				if err != nil {
					t.Fatal(err)
				}
				accounts[fmt.Sprint(meta["namespace"], "/", meta["name"])] = string(b)
			}
			if diff := cmp.Diff(tc.accounts, accounts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Usages of the server's ServiceAccount: -want, +got:\n%s", diff)
			}
		})
	}
}

// The claim says which generation of its spec its status was composed from,
// so a user (or a test) can tell a change that is applied from one that is
// not yet.
func TestClaimsReportObservedGeneration(t *testing.T) {
	for name, xr := range map[string]string{"TerdutTeam": teamXR, "TerdutServer": serverXR1} {
		t.Run(name, func(t *testing.T) {
			obj := resource.MustStructJSON(xr)
			obj.GetFields()["metadata"].GetStructValue().GetFields()["generation"] = structpb.NewNumberValue(3)
			req := &fnv1.RunFunctionRequest{
				Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: obj}},
				Desired:  &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xr)}},
			}
			rsp, err := (&Function{Log: logging.NewNopLogger()}).RunFunction(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
			if st["observedGeneration"] != float64(3) {
				t.Errorf("status.observedGeneration = %v, want 3", st["observedGeneration"])
			}
		})
	}
}
