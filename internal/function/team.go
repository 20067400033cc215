package function

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/teamkey"
)

// Names of the resources a TerdutTeam composes, as the pipeline knows them;
// switches and integrations are "switch-<name>" and "integration-<name>".
const (
	NameTeam             = "team"
	NameEscalationPolicy = "escalation-policy"
	prefixSwitch         = "switch-"
	prefixIntegration    = "integration-"
)

// DefaultProviderConfig is what a TerdutTeam without serverRef or
// providerConfigRef uses.
const DefaultProviderConfig = "default"

// TeamNames are the names a TerdutTeam claim's resources get.
type TeamNames struct {
	// Namespace of the claim: every composed MR lives there.
	Namespace string
	// Name of the claim: the Team's and the EscalationPolicy's name, and
	// the prefix of the others'.
	Name string
}

// Child is the name of a switch's or an integration's MR.
func (n TeamNames) Child(name string) string { return n.Name + "-" + name }

// WebhookSecret is the Secret an integration's url and key are written
// to: <claim>-<integration>-webhook, for Alertmanager's webhook_configs.
func (n TeamNames) WebhookSecret(integration string) string {
	return n.Child(integration) + "-webhook"
}

// TeamProviderConfig is the provider config a TerdutTeam's MRs use:
// serverRef's ClusterProviderConfig (<namespace>.<name>, the server claim's
// namespace defaulting to the team's), providerConfigRef as given, or the
// ClusterProviderConfig "default".
func TeamProviderConfig(n TeamNames, s *platform.XTerdutTeamSpec) *xpv2.ProviderConfigReference {
	switch {
	case s.ServerRef != nil:
		ns := s.ServerRef.Namespace
		if ns == "" {
			ns = n.Namespace
		}
		return &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: ProviderConfigName(ns, s.ServerRef.Name)}
	case s.ProviderConfigRef != nil:
		kind := s.ProviderConfigRef.Kind
		if kind == "" {
			kind = v1alpha1.ClusterProviderConfigKind
		}
		return &xpv2.ProviderConfigReference{Kind: kind, Name: s.ProviderConfigRef.Name}
	default:
		return &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: DefaultProviderConfig}
	}
}

// Team returns what a TerdutTeam composes: a Team, its EscalationPolicy,
// DeadmanSwitches and Integrations as MRs in the claim's namespace. The
// children reference the Team by name (teamIdRef), so they wait for its ID.
func Team(n TeamNames, s *platform.XTerdutTeamSpec) []Composed {
	pc := TeamProviderConfig(n, s)
	mr := func(name string) (metav1.TypeMeta, metav1.ObjectMeta, xpv2.ManagedResourceSpec) {
		return metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String()},
			metav1.ObjectMeta{Namespace: n.Namespace, Name: name},
			xpv2.ManagedResourceSpec{ProviderConfigReference: pc.DeepCopy()}
	}
	ref := func() *xpv2.Reference { return &xpv2.Reference{Name: n.Name} }

	tm, om, ms := mr(n.Name)
	tm.Kind = v1alpha1.TeamKind
	out := []Composed{{Name: NameTeam, Object: &v1alpha1.Team{
		TypeMeta: tm, ObjectMeta: om,
		Spec: v1alpha1.TeamSpec{ManagedResourceSpec: ms, ForProvider: v1alpha1.TeamParameters{
			DisplayName: s.DisplayName, OIDC: s.OIDC.DeepCopy(),
		}},
	}}}

	if p := s.EscalationPolicy; p != nil {
		tm, om, ms := mr(n.Name)
		tm.Kind = v1alpha1.EscalationPolicyKind
		levels := make([]v1alpha1.EscalationLevel, len(p.Levels))
		for i := range p.Levels {
			p.Levels[i].DeepCopyInto(&levels[i])
		}
		out = append(out, Composed{Name: NameEscalationPolicy, Object: &v1alpha1.EscalationPolicy{
			TypeMeta: tm, ObjectMeta: om,
			Spec: v1alpha1.EscalationPolicySpec{ManagedResourceSpec: ms, ForProvider: v1alpha1.EscalationPolicyParameters{
				TeamIDRef: ref(), RepeatCount: p.RepeatCount, FallbackTopic: p.FallbackTopic, Levels: levels,
			}},
		}})
	}

	for _, sw := range s.DeadmanSwitches {
		tm, om, ms := mr(n.Child(sw.Name))
		tm.Kind = v1alpha1.DeadmanSwitchKind
		out = append(out, Composed{Name: prefixSwitch + sw.Name, Object: &v1alpha1.DeadmanSwitch{
			TypeMeta: tm, ObjectMeta: om,
			Spec: v1alpha1.DeadmanSwitchSpec{ManagedResourceSpec: ms, ForProvider: v1alpha1.DeadmanSwitchParameters{
				TeamIDRef: ref(), Name: sw.Name, Matcher: sw.Matcher, Timeout: sw.Timeout, Severity: sw.Severity,
			}},
		}})
	}

	for _, in := range s.Integrations {
		tm, om, ms := mr(n.Child(in.Name))
		tm.Kind = v1alpha1.IntegrationKind
		ms.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: n.WebhookSecret(in.Name)}
		out = append(out, Composed{Name: prefixIntegration + in.Name, Object: &v1alpha1.Integration{
			TypeMeta: tm, ObjectMeta: om,
			Spec: v1alpha1.IntegrationSpec{ManagedResourceSpec: ms, ForProvider: v1alpha1.IntegrationParameters{
				TeamIDRef: ref(), Kind: in.Kind, Name: in.Name,
			}},
		}})
	}
	return out
}

// TeamStatus is what the claim reports of its team, before the observed
// team ID is filled in.
func TeamStatus(n TeamNames, s *platform.XTerdutTeamSpec) platform.XTerdutTeamStatus {
	pc := TeamProviderConfig(n, s)
	st := platform.XTerdutTeamStatus{ProviderConfig: pc.Kind + "/" + pc.Name}
	for _, in := range s.Integrations {
		st.WebhookSecrets = append(st.WebhookSecrets, n.WebhookSecret(in.Name))
	}
	return st
}

// requiredProviderConfig names the team's provider config among the
// required resources.
const requiredProviderConfig = "provider-config"

// teamServer asks Crossplane for the team's provider config and fills in
// where the team's server is and where its key lives. Until the
// config is read, or while it does not exist, both stay empty. It returns
// the XTerdutServer that composed the config, if one did.
func teamServer(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, n TeamNames, s *platform.XTerdutTeamSpec, providerNamespace string, st *platform.XTerdutTeamStatus) (string, error) {
	ref := TeamProviderConfig(n, s)
	sel := &fnv1.ResourceSelector{
		ApiVersion: v1alpha1.SchemeGroupVersion.String(), Kind: ref.Kind,
		Match: &fnv1.ResourceSelector_MatchName{MatchName: ref.Name},
	}
	ns := ""
	if ref.Kind == v1alpha1.ProviderConfigKind {
		ns = n.Namespace
		sel.Namespace = &ns
	}
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{requiredProviderConfig: sel}}
	found, resolved, err := request.GetRequiredResource(req, requiredProviderConfig)
	if err != nil {
		return "", errors.Wrapf(err, "cannot read %s %s", ref.Kind, ref.Name)
	}
	if !resolved || len(found) == 0 {
		return "", nil
	}
	pc := &v1alpha1.ProviderConfig{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Resource.Object, pc); err != nil {
		return "", errors.Wrapf(err, "cannot decode %s %s", ref.Kind, ref.Name)
	}
	server := composedBy(pc, platform.XTerdutServerKind)
	st.ServerEndpoint = pc.Spec.Endpoint
	if ts := pc.Spec.TeamScopedCredentials; ts != nil && !*ts {
		if r := pc.Spec.Credentials.SecretRef; r != nil {
			secretNS := r.Namespace
			if secretNS == "" {
				secretNS = ns
			}
			st.CredentialsSecretRef = &platform.CredentialsSecretRef{Namespace: secretNS, Name: r.Name, Key: r.Key}
		}
		return server, nil
	}
	if st.TeamID > 0 {
		st.CredentialsSecretRef = &platform.CredentialsSecretRef{
			Namespace: providerNamespace, Name: teamkey.SecretName(teamkey.ConfigID(ref.Kind, ns, ref.Name), pc.Spec.Endpoint, st.TeamID), Key: teamkey.Key,
		}
	}
	return server, nil
}

// teamHoldsServer is what holds the team's server, the XTerdutServer named
// server whose ClusterProviderConfig is providerConfig, while the team
// (its composite named xr, and the MRs in team) exists: a ClusterUsage of
// the server, and once Crossplane has read the server's bootstrap
// ServiceAccount, a Usage of it by each MR.
func teamHoldsServer(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, n TeamNames, team []Composed, xr, server, providerConfig, providerNamespace string) ([]Composed, error) {
	out := []Composed{serverInUse(n, xr, server)}
	account := serverAccount(providerConfig)
	rsp.Requirements.Resources[requiredServerAccount] = &fnv1.ResourceSelector{
		ApiVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ServiceAccountKind,
		Match:     &fnv1.ResourceSelector_MatchName{MatchName: account},
		Namespace: &providerNamespace,
	}
	found, resolved, err := request.GetRequiredResource(req, requiredServerAccount)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read ServiceAccount %s/%s", providerNamespace, account)
	}
	if resolved && len(found) > 0 {
		out = append(out, accountInUse(n, team, providerNamespace, account)...)
	}
	return out, nil
}
