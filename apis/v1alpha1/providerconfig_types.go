package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A ProviderConfigSpec says which terdut-server to talk to and with which key.
type ProviderConfigSpec struct {
	// Endpoint is terdut-server's base URL, e.g.
	// http://terdut.platform-oncall.svc:8080.
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+`
	// +kubebuilder:validation:MaxLength=2048
	Endpoint string `json:"endpoint"`

	// Credentials locate the API key: an instance-scoped service-account key
	// kept in the operator namespace. The key is sent as a Bearer token.
	Credentials ProviderCredentials `json:"credentials"`

	// CABundleSecretRef selects a PEM CA bundle to trust for an https
	// endpoint, instead of the system roots. A namespaced ProviderConfig may
	// only select a Secret in its own namespace (the default).
	// +optional
	CABundleSecretRef *SecretKeySelector `json:"caBundleSecretRef,omitempty"`

	// RequestTimeout bounds each request to terdut-server.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="requestTimeout must be a duration greater than zero, e.g. 30s"
	RequestTimeout *metav1.Duration `json:"requestTimeout,omitempty"`

	// TeamScopedCredentials makes EscalationPolicies, DeadmanSwitches and
	// Integrations talk to the server with a key scoped to their own team,
	// never with this config's instance key. The provider mints each team's
	// key on first need and keeps it in a Secret in its own namespace.
	// +optional
	// +kubebuilder:default=true
	TeamScopedCredentials *bool `json:"teamScopedCredentials,omitempty"`
}

// A ClusterProviderConfigSpec is a ProviderConfigSpec plus the consent of the
// server's owner to serve other namespaces.
// +kubebuilder:validation:XValidation:rule="!has(self.credentials.secretRef) || has(self.credentials.secretRef.__namespace__)",message="a ClusterProviderConfig's credentials.secretRef needs a namespace"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleSecretRef) || has(self.caBundleSecretRef.__namespace__)",message="a ClusterProviderConfig's caBundleSecretRef needs a namespace"
type ClusterProviderConfigSpec struct {
	ProviderConfigSpec `json:",inline"`

	// HomeNamespace is the namespace the server belongs to (its owner's).
	// Managed resources there may always use this config.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	HomeNamespace string `json:"homeNamespace,omitempty"`

	// AllowedNamespaces says which other namespaces may use this config.
	// It is checked at every reconcile: narrowing it is a live revocation.
	// A refused managed resource turns Ready=False, reason RefNotPermitted;
	// nothing is deleted on the server, and deleting it still cleans up.
	// +optional
	// +kubebuilder:default={from: None}
	AllowedNamespaces AllowedNamespaces `json:"allowedNamespaces,omitempty"`
}

// AllowedNamespaces is a namespace consent, as Gateway API's
// allowedListeners.namespaces.
// +kubebuilder:validation:XValidation:rule="self.from != 'Selector' || has(self.selector)",message="allowedNamespaces.selector is required when from is Selector"
type AllowedNamespaces struct {
	// From: None (only homeNamespace), Same (the same: homeNamespace only,
	// spelled out), All (every namespace) or Selector (namespaces whose
	// labels match selector).
	// +kubebuilder:validation:Enum=None;Same;All;Selector
	// +kubebuilder:default=None
	From string `json:"from"`

	// Selector over Namespace labels, for from: Selector.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// Values of AllowedNamespaces.From.
const (
	NamespacesFromNone     = "None"
	NamespacesFromSame     = "Same"
	NamespacesFromAll      = "All"
	NamespacesFromSelector = "Selector"
)

// ProviderCredentials say where the API key is.
// +kubebuilder:validation:XValidation:rule="self.source != 'Secret' || has(self.secretRef)",message="credentials.secretRef is required when source is Secret"
// +kubebuilder:validation:XValidation:rule="self.source != 'Environment' || has(self.env)",message="credentials.env is required when source is Environment"
// +kubebuilder:validation:XValidation:rule="self.source != 'Filesystem' || has(self.fs)",message="credentials.fs is required when source is Filesystem"
type ProviderCredentials struct {
	// Source of the key. Secret is the one to use in a cluster: the
	// instance key in the operator namespace.
	// +kubebuilder:validation:Enum=Secret;Environment;Filesystem
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef selects the key in a Secret, for source Secret. A
	// namespaced ProviderConfig may only select a Secret in its own
	// namespace, which is also the default.
	// +optional
	SecretRef *SecretKeySelector `json:"secretRef,omitempty"`

	// Env selects the key in the provider's environment (source
	// Environment; ClusterProviderConfig only).
	// +optional
	Env *xpv2.EnvSelector `json:"env,omitempty"`

	// Fs selects the key in a file of the provider's (source Filesystem;
	// ClusterProviderConfig only).
	// +optional
	Fs *xpv2.FsSelector `json:"fs,omitempty"`
}

// Selectors are the credentials as crossplane-runtime's credential
// extractor takes them, with namespace as a secretRef's namespace when it
// names none.
func (c *ProviderCredentials) Selectors(namespace string) xpv2.CommonCredentialSelectors {
	return xpv2.CommonCredentialSelectors{Env: c.Env, Fs: c.Fs, SecretRef: c.SecretRef.Selector(namespace)}
}

// A SecretKeySelector selects one key of a Secret.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace of the Secret. A namespaced ProviderConfig may leave it out
	// (it is the config's own, the only one allowed); a
	// ClusterProviderConfig must name it.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// Selector is s as crossplane's selector, with namespace when s names none;
// nil for a nil s.
func (s *SecretKeySelector) Selector(namespace string) *xpv2.SecretKeySelector {
	if s == nil {
		return nil
	}
	ns := s.Namespace
	if ns == "" {
		ns = namespace
	}
	return &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Name: s.Name, Namespace: ns}, Key: s.Key}
}

// A ProviderConfigStatus reflects the observed state of a provider config.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// A ProviderConfig configures access to one terdut-server for the managed
// resources in its own namespace.
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ENDPOINT",type="string",JSONPath=".spec.endpoint"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="SECRET-NAME",type="string",JSONPath=".spec.credentials.secretRef.name",priority=1
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,terdut}
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// NOTE: a namespaced config is a tenant's: Environment or Filesystem
	// would have the provider read its own environment or files (its
	// Kubernetes token) and send them to an endpoint the tenant chose.
	// +kubebuilder:validation:XValidation:rule="self.credentials.source == 'Secret'",message="a namespaced ProviderConfig reads its key from a Secret in its own namespace only (credentials.source: Secret); Environment and Filesystem are for ClusterProviderConfigs, which only the platform team can write"
	Spec   ProviderConfigSpec   `json:"spec"`
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderConfigList contains a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ProviderConfig `json:"items"`
}

// +kubebuilder:object:root=true

// A ClusterProviderConfig configures access to one terdut-server for managed
// resources in its home namespace and the namespaces its allowedNamespaces
// admit.
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="ENDPOINT",type="string",JSONPath=".spec.endpoint"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="HOME",type="string",JSONPath=".spec.homeNamespace"
// +kubebuilder:printcolumn:name="ALLOWED",type="string",JSONPath=".spec.allowedNamespaces.from"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="SECRET-NAME",type="string",JSONPath=".spec.credentials.secretRef.name",priority=1
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,terdut}
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterProviderConfigSpec `json:"spec"`
	Status ProviderConfigStatus      `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigList contains a list of ClusterProviderConfig.
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterProviderConfig `json:"items"`
}

// +kubebuilder:object:root=true

// A ProviderConfigUsage records that a managed resource uses a ProviderConfig
// or a ClusterProviderConfig; it lives in the managed resource's namespace
// and is what blocks a provider config's deletion while it is in use.
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="CONFIG-KIND",type="string",JSONPath=".providerConfigRef.kind"
// +kubebuilder:printcolumn:name="CONFIG-NAME",type="string",JSONPath=".providerConfigRef.name"
// +kubebuilder:printcolumn:name="RESOURCE-KIND",type="string",JSONPath=".resourceRef.kind"
// +kubebuilder:printcolumn:name="RESOURCE-NAME",type="string",JSONPath=".resourceRef.name"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,terdut}
type ProviderConfigUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	xpv2.TypedProviderConfigUsage `json:",inline"`
}

// +kubebuilder:object:root=true

// ProviderConfigUsageList contains a list of ProviderConfigUsage.
type ProviderConfigUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ProviderConfigUsage `json:"items"`
}
