package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// XTerdutTeamSpec is a TerdutTeam claim: a team with its escalation
// policy, dead man's switches and Alertmanager integrations: one Team and its children as managed resources in the claim's
// namespace.
// +kubebuilder:validation:XValidation:rule="!(has(self.serverRef) && has(self.providerConfigRef))",message="set serverRef or providerConfigRef, not both"
type XTerdutTeamSpec struct {
	// ServerRef names the TerdutServer claim whose server the team lives
	// on. Its namespace defaults to the team's own; another namespace
	// needs that server's allowedTeams to admit this one.
	// +optional
	ServerRef *ServerRef `json:"serverRef,omitempty"`

	// ProviderConfigRef names the provider config to use directly, for a
	// server not made by a TerdutServer. Neither set: the
	// ClusterProviderConfig "default".
	// +optional
	ProviderConfigRef *ProviderConfigRef `json:"providerConfigRef,omitempty"`

	// DisplayName of the team on the server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	DisplayName string `json:"displayName"`

	// OIDC groups synced into the team at login.
	// +optional
	OIDC *v1alpha1.TeamOIDC `json:"oidc,omitempty"`

	// EscalationPolicy of the team. Left out: the team gets none.
	// +optional
	EscalationPolicy *EscalationPolicy `json:"escalationPolicy,omitempty"`

	// DeadmanSwitches of the team.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=name
	DeadmanSwitches []DeadmanSwitch `json:"deadmanSwitches,omitempty"`

	// Integrations are the team's Alertmanager receivers. Each one's
	// webhook URL and key are written to the Secret
	// <claim name>-<integration name>-webhook in the claim's namespace.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=name
	Integrations []Integration `json:"integrations,omitempty"`
}

// ServerRef names a TerdutServer claim.
type ServerRef struct {
	// Name of the TerdutServer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Namespace of the TerdutServer; defaults to the team's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// ProviderConfigRef names a provider config.
type ProviderConfigRef struct {
	// Kind of the provider config.
	// +optional
	// +kubebuilder:default=ClusterProviderConfig
	// +kubebuilder:validation:Enum=ProviderConfig;ClusterProviderConfig
	Kind string `json:"kind"`

	// Name of the provider config.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// EscalationPolicy is the team's one escalation policy.
type EscalationPolicy struct {
	// RepeatCount is how often the levels are walked again.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RepeatCount int64 `json:"repeatCount"`

	// FallbackTopic is paged when nobody acknowledges.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FallbackTopic string `json:"fallbackTopic,omitempty"`

	// Levels are paged in order.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Levels []v1alpha1.EscalationLevel `json:"levels"`
}

// DeadmanSwitch is one heartbeat watch of the team.
type DeadmanSwitch struct {
	// Name of the switch, on the server and in its managed resource's
	// name (<claim name>-<name>).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Matcher of the heartbeat alert: comma-separated label=value pairs.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=[^,]*(,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=[^,]*)*$`
	Matcher string `json:"matcher"`

	// Timeout after the last heartbeat, as a Go duration.
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	Timeout string `json:"timeout"`

	// Severity of the alert raised when it fires.
	// +optional
	// +kubebuilder:default=critical
	// +kubebuilder:validation:Enum=critical;warning;info
	Severity string `json:"severity"`
}

// Integration is one Alertmanager receiver of the team.
type Integration struct {
	// Name of the integration, on the server and in its managed
	// resource's and Secret's names.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Kind of the integration.
	// +optional
	// +kubebuilder:default=alertmanager
	// +kubebuilder:validation:Enum=alertmanager;grafana;webhook
	Kind string `json:"kind"`
}

// XTerdutTeamStatus is what the composition reports back.
type XTerdutTeamStatus struct {
	// ObservedGeneration is the metadata.generation of the spec this status
	// was composed from: while it is behind, a change is not applied yet.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// TeamID is the team's server-side ID.
	// +optional
	TeamID int64 `json:"teamId,omitempty"`

	// ProviderConfig the team's managed resources use, as Kind/name.
	// +optional
	ProviderConfig string `json:"providerConfig,omitempty"`

	// ServerEndpoint is where the team's server is reached: its provider
	// config's endpoint.
	// +optional
	ServerEndpoint string `json:"serverEndpoint,omitempty"`

	// CredentialsSecretRef is where the key the team's resources use
	// lives, once the team has its ID: the team-scoped key Secret the
	// provider keeps in its own namespace (never the team's), or the provider
	// config's own key when that config does not mint team keys. The key
	// itself is never shown here, and a tenant is not given access to it.
	// +optional
	CredentialsSecretRef *CredentialsSecretRef `json:"credentialsSecretRef,omitempty"`

	// WebhookSecrets are the Secrets, in the claim's namespace, holding
	// each integration's url and key.
	// +optional
	WebhookSecrets []string `json:"webhookSecrets,omitempty"`

	// Summary says what is not ready yet, or that everything is.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// An XTerdutTeam is a team with its on-call setup, claimed as a
// TerdutTeam.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type XTerdutTeam struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   XTerdutTeamSpec   `json:"spec"`
	Status XTerdutTeamStatus `json:"status,omitempty"`
}
