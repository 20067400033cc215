package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// XTerdutServerSpec is a TerdutServer claim: one terdut-server
// Deployment and Service in the claim's namespace, its bootstrap service
// account and the ClusterProviderConfig that TerdutTeams use to reach it.
type XTerdutServerSpec struct {
	// Image of terdut-server.
	// +optional
	// +kubebuilder:default={}
	Image Image `json:"image"`

	// Replicas of the server. terdut-server is not horizontally scale
	// tested: keep 1. 0 stops the server (and is what a control plane
	// without nodes can make Available).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Replicas *int32 `json:"replicas,omitempty"`

	// Networking of the server.
	// +optional
	// +kubebuilder:default={}
	Networking Networking `json:"networking"`

	// Database the server uses: dsn with passwordSecretRef, or
	// postgresClusterRef (a Zalando postgres-operator cluster in the
	// claim's namespace). Nothing provisions a database.
	Database Database `json:"database"`

	// Sweeper ages incidents out.
	// +optional
	// +kubebuilder:default={}
	Sweeper Sweeper `json:"sweeper"`

	// Deadman configures the server's own heartbeat watch.
	// +optional
	// +kubebuilder:default={}
	Deadman Deadman `json:"deadman"`

	// Notify configures notifications (ntfy).
	// +optional
	// +kubebuilder:default={}
	Notify Notify `json:"notify"`

	// OIDC login.
	// +optional
	// +kubebuilder:default={}
	OIDC OIDC `json:"oidc"`

	// PasswordLogin allows username/password login.
	// +optional
	// +kubebuilder:default=true
	PasswordLogin *bool `json:"passwordLogin,omitempty"`

	// AllowedTeams is the consent for TerdutTeams in other namespaces
	// (none by default); it becomes the ClusterProviderConfig's
	// allowedNamespaces. Same-namespace teams are always allowed.
	// +optional
	// +kubebuilder:default={}
	AllowedTeams AllowedTeams `json:"allowedTeams"`

	// Bootstrap is the first admin user the provider's self-registration
	// creates on the fresh server.
	// +optional
	// +kubebuilder:default={}
	Bootstrap Bootstrap `json:"bootstrap"`

	// KeyRotation of the instance key the provider holds for this server
	// every interval, and once more each time rotationRequest
	// changes. Teams' keys are not touched.
	// +optional
	// +kubebuilder:default={}
	KeyRotation ServerKeyRotation `json:"keyRotation"`

	// Resources of the server container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Endpoint overrides the URL the provider uses to reach the server,
	// for a server reachable elsewhere than its in-cluster Service
	// (http://<name>.<namespace>.svc:<servicePort>).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+(/.*)?$`
	Endpoint string `json:"endpoint,omitempty"`
}

// Image of terdut-server.
type Image struct {
	// Repository of the image.
	// +optional
	// +kubebuilder:default="git.ryuvia.com/niklas/terdut-server"
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository"`

	// Tag of the image.
	// +optional
	// +kubebuilder:default="v0.9.3"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Tag string `json:"tag"`

	// PullPolicy of the image.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// Networking of the server.
// +kubebuilder:validation:XValidation:rule="!has(self.gatewayListener) || size(self.gatewayListener) == 0 || (has(self.hostname) && size(self.hostname) > 0)",message="networking.gatewayListener needs networking.hostname"
type Networking struct {
	// Hostname the server is reached at from outside; it is the server's
	// public URL and the HTTPRoute's hostname.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	Hostname string `json:"hostname"`

	// ServicePort is the port of the Service and the container.
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ServicePort int32 `json:"servicePort"`

	// GatewayListener attaches an HTTPRoute for hostname to a Gateway API
	// listener, written <gateway-namespace>/<gateway-name>/<listener-name>
	// (the listener part may be left off). Empty: no HTTPRoute.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?(/[a-z0-9]([-a-z0-9]*[a-z0-9])?)?)?$`
	GatewayListener string `json:"gatewayListener"`
}

// Database the server uses.
// +kubebuilder:validation:XValidation:rule="has(self.dsn) != has(self.postgresClusterRef)",message="set exactly one of database.dsn (with database.passwordSecretRef) and database.postgresClusterRef"
// +kubebuilder:validation:XValidation:rule="!has(self.dsn) || has(self.passwordSecretRef)",message="database.dsn needs database.passwordSecretRef, the Secret key holding the password"
// +kubebuilder:validation:XValidation:rule="!has(self.postgresClusterRef) || !has(self.passwordSecretRef)",message="database.passwordSecretRef goes with database.dsn; a postgresClusterRef's password comes from the operator's credentials Secret"
type Database struct {
	// DSN of the database, without a password, e.g.
	// postgres://terdut@terdut-postgres:5432/terdut?sslmode=require.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^postgres(ql)?://`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^postgres(ql)?://[^/@]*:[^/@]*@')",message="database.dsn must not carry a password: put it in the Secret database.passwordSecretRef names"
	DSN *string `json:"dsn,omitempty"`

	// PasswordSecretRef is the Secret key, in the claim's namespace,
	// holding the database password (PGPASSWORD).
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`

	// PostgresClusterRef names a postgresql.acid.zalan.do cluster in the
	// claim's namespace.
	// +optional
	PostgresClusterRef *PostgresClusterRef `json:"postgresClusterRef,omitempty"`
}

// SecretKeyRef is a key of a Secret in the claim's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key in the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PostgresClusterRef names a Zalando postgres-operator cluster. The server
// connects to <name>.<namespace>.svc:5432 as user with the password from
// the Secret <user>.<name>.credentials.postgresql.acid.zalan.do, as
// postgres-operator names it.
type PostgresClusterRef struct {
	// Name of the postgresql resource.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// User the server connects as (a user the cluster's spec.users
	// declares).
	// +optional
	// +kubebuilder:default=terdut
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	User string `json:"user"`

	// Database name.
	// +optional
	// +kubebuilder:default=terdut
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	Database string `json:"database"`
}

// Sweeper ages incidents out.
type Sweeper struct {
	// StaleAfter marks an incident without news stale, as a Go duration.
	// +optional
	// +kubebuilder:default="6h"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	StaleAfter string `json:"staleAfter"`

	// ArchiveAfter archives a resolved incident, as a Go duration.
	// +optional
	// +kubebuilder:default="168h"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	ArchiveAfter string `json:"archiveAfter"`
}

// Deadman is the server's own heartbeat watch.
type Deadman struct {
	// Matchers of the heartbeat alert: comma-separated label=value pairs.
	// +optional
	// +kubebuilder:default="alertname=Watchdog"
	// +kubebuilder:validation:MaxLength=1024
	Matchers string `json:"matchers"`

	// Timeout after the last heartbeat, as a Go duration.
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	Timeout string `json:"timeout"`

	// Severity of the alert raised when it fires.
	// +optional
	// +kubebuilder:default=critical
	// +kubebuilder:validation:Enum=critical;warning;info
	Severity string `json:"severity"`
}

// Notify configures notifications through ntfy.
type Notify struct {
	// NtfyURL is the ntfy server.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?://.+)?$`
	NtfyURL string `json:"ntfyURL"`

	// FallbackTopic is paged when no escalation policy applies.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=256
	FallbackTopic string `json:"fallbackTopic"`

	// RepeatEvery re-sends an unacknowledged notification, as a Go
	// duration.
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	RepeatEvery string `json:"repeatEvery"`

	// TokenSecretRef is the Secret key holding the ntfy access token.
	// +optional
	TokenSecretRef *SecretKeyRef `json:"tokenSecretRef,omitempty"`
}

// OIDC login.
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || (has(self.issuer) && size(self.issuer) > 0 && has(self.clientID) && size(self.clientID) > 0 && has(self.clientSecretRef))",message="oidc.enabled needs oidc.issuer, oidc.clientID and oidc.clientSecretRef"
type OIDC struct {
	// Enabled turns OIDC login on.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// Issuer URL.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?://.+)?$`
	Issuer string `json:"issuer"`

	// ClientID at the issuer.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=256
	ClientID string `json:"clientID"`

	// ClientSecretRef is the Secret key holding the client secret.
	// +optional
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef,omitempty"`

	// Name shown on the login button.
	// +optional
	// +kubebuilder:default=SSO
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// Scopes requested, space separated.
	// +optional
	// +kubebuilder:default="openid profile email"
	// +kubebuilder:validation:MaxLength=1024
	Scopes string `json:"scopes"`

	// AllowedGroups may log in; empty allows every authenticated user.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	AllowedGroups []string `json:"allowedGroups,omitempty"`

	// AdminGroup's members are server admins.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:MaxLength=256
	AdminGroup string `json:"adminGroup"`

	// SessionMaxAge is how long a login lasts, as a Go duration.
	// +optional
	// +kubebuilder:default="12h"
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	SessionMaxAge string `json:"sessionMaxAge"`
}

// AllowedTeams is the cross-namespace consent of a server: which other
// namespaces' TerdutTeams may use it.
type AllowedTeams struct {
	// Namespaces whose TerdutTeams may use this server.
	// +optional
	// +kubebuilder:default={from: None}
	Namespaces v1alpha1.AllowedNamespaces `json:"namespaces"`
}

// ServerKeyRotation says when the instance key is rotated.
type ServerKeyRotation struct {
	// Interval between rotations.
	// +optional
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m')",message="keyRotation.interval must be a duration of at least 1m, e.g. 720h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// RotationRequest rotates the key now, once each time it changes: set
	// it to a new value (e.g. the current date).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	RotationRequest string `json:"rotationRequest,omitempty"`
}

// Bootstrap is the server's first admin user.
type Bootstrap struct {
	// Username of the first admin.
	// +optional
	// +kubebuilder:default=admin
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Username string `json:"username"`

	// Email of the first admin.
	// +optional
	// +kubebuilder:validation:MaxLength=254
	Email string `json:"email,omitempty"`
}

// XTerdutServerStatus is what the composition reports back.
type XTerdutServerStatus struct {
	// ObservedGeneration is the metadata.generation of the spec this status
	// was composed from: while it is behind, a change is not applied yet.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Endpoint the provider reaches the server at.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// ServiceName of the server's Service in the claim's namespace.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// ProviderConfigName is the ClusterProviderConfig TerdutTeams (and
	// managed resources) use for this server.
	// +optional
	ProviderConfigName string `json:"providerConfigName,omitempty"`

	// CredentialsSecretRef is where the instance key is kept: always in
	// the provider's namespace, key "token".
	// +optional
	CredentialsSecretRef *CredentialsSecretRef `json:"credentialsSecretRef,omitempty"`

	// Database is what the composition saw of a Zalando cluster's
	// credentials Secret, to tell a rotation of its password.
	// +optional
	Database *ServerDatabaseStatus `json:"database,omitempty"`

	// KeyRotation is the instance key's rotation as the provider reports it.
	// +optional
	KeyRotation *ServerKeyRotationStatus `json:"keyRotation,omitempty"`

	// Summary says what is not ready yet, or that everything is.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// ServerDatabaseStatus is what the composition saw of the database
// credentials Secret postgres-operator writes.
type ServerDatabaseStatus struct {
	// CredentialsSecret is the Secret's name, in the claim's namespace.
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// CredentialsFingerprint tells one content of the Secret from another:
	// 16 hex digits of a SHA-256 over the composite's UID and the Secret's
	// data. It is not the password and does not reveal it.
	// +optional
	CredentialsFingerprint string `json:"credentialsFingerprint,omitempty"`
	// CredentialsChangedAt is when the composition saw the Secret change
	// (unset: not since it was first seen).
	// +optional
	CredentialsChangedAt *metav1.Time `json:"credentialsChangedAt,omitempty"`
	// ChangedAtGeneration is the Deployment's generation then: a rollout
	// past it (kubectl rollout restart, a new image) restarts the pods with
	// the new password.
	// +optional
	ChangedAtGeneration int64 `json:"changedAtGeneration,omitempty"`
}

// ServerKeyRotationStatus is the instance key's rotation as observed.
type ServerKeyRotationStatus struct {
	// NextRotationAt is when the key rotates next.
	// +optional
	NextRotationAt *metav1.Time `json:"nextRotationAt,omitempty"`
	// LastRotationRequest is the keyRotation.rotationRequest handled last.
	// +optional
	LastRotationRequest string `json:"lastRotationRequest,omitempty"`
}

// CredentialsSecretRef is a key of a Secret in a given namespace.
type CredentialsSecretRef struct {
	// Namespace of the Secret.
	Namespace string `json:"namespace"`
	// Name of the Secret.
	Name string `json:"name"`
	// Key in the Secret.
	Key string `json:"key"`
}

// An XTerdutServer is a terdut-server, claimed as a TerdutServer.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type XTerdutServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   XTerdutServerSpec   `json:"spec"`
	Status XTerdutServerStatus `json:"status,omitempty"`
}
