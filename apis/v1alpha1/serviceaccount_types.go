package v1alpha1

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// ServiceAccountParameters are a terdut service account and its active key.
// +kubebuilder:validation:XValidation:rule="self.scope != 'team' || has(self.teamId) || has(self.teamIdRef) || has(self.teamIdSelector)",message="a team-scoped service account needs teamId, teamIdRef or teamIdSelector"
// +kubebuilder:validation:XValidation:rule="self.scope != 'instance' || (!has(self.teamId) && !has(self.teamIdRef) && !has(self.teamIdSelector))",message="an instance-scoped service account belongs to no team"
// +kubebuilder:validation:XValidation:rule="self.scope == 'instance' || !has(self.bootstrap)",message="bootstrap is for instance-scoped service accounts only"
// +kubebuilder:validation:XValidation:rule="oldSelf.scope == self.scope && oldSelf.name == self.name",message="scope and name are immutable"
type ServiceAccountParameters struct {
	// Name of the service account on the server. Names beginning with
	// crossplane-team- are the provider's own (each team's key account).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('crossplane-team-')",message="names beginning with crossplane-team- are the provider's own (each team's key account); choose another name"
	Name string `json:"name"`

	// Scope: instance (may manage teams and service accounts) or team (its
	// own team's escalation policy, switches, integrations, OIDC groups).
	// +kubebuilder:validation:Enum=instance;team
	// +kubebuilder:default=instance
	Scope string `json:"scope"`

	// TeamID of a team-scoped account.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TeamID *int64 `json:"teamId,omitempty"`

	// TeamIDRef names a Team in this namespace.
	// +optional
	TeamIDRef *xpv2.Reference `json:"teamIdRef,omitempty"`

	// TeamIDSelector selects a Team in this namespace by labels.
	// +optional
	TeamIDSelector *xpv2.Selector `json:"teamIdSelector,omitempty"`

	// Bootstrap self-registers against a server nobody has bootstrapped
	// yet: once /healthz answers, POST /api/bootstrap once,
	// checkpoint the admin key in a Secret of this namespace before anything
	// else, create the account, mint its key, write the connection Secret,
	// delete the checkpoint. Interrupted, it resumes from the checkpoint.
	// +optional
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`

	// KeyRotation mints a new key, writes it to the connection Secret in
	// place, and only then revokes the old one.
	// +optional
	KeyRotation *KeyRotation `json:"keyRotation,omitempty"`
}

// Bootstrap is the first admin user /api/bootstrap creates.
type Bootstrap struct {
	// Username of the first admin user.
	// +optional
	// +kubebuilder:default=admin
	// +kubebuilder:validation:MaxLength=128
	Username string `json:"username,omitempty"`

	// Email of the first admin user.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Email string `json:"email,omitempty"`
}

// KeyRotation says when the key is rotated.
type KeyRotation struct {
	// Interval between rotations, e.g. 720h. Unset: a ServiceAccount's key
	// rotates only on request, a Team's key every 720h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m')",message="keyRotation.interval must be a duration of at least 1m, e.g. 720h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// RotationRequest rotates the key once each time it changes: set it to
	// a new value (e.g. the current date) to rotate now.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	RotationRequest string `json:"rotationRequest,omitempty"`
}

// ServiceAccountObservation is the account and its key as last seen.
type ServiceAccountObservation struct {
	// ID of the account on the server.
	ID int64 `json:"id,omitempty"`
	// Scope on the server.
	Scope string `json:"scope,omitempty"`
	// TeamID of a team-scoped account.
	TeamID int64 `json:"teamId,omitempty"`
	// ActiveKeyID is the ID of the key in the connection Secret.
	ActiveKeyID int64 `json:"activeKeyId,omitempty"`
	// KeyMintedAt is when the active key was minted.
	KeyMintedAt *metav1.Time `json:"keyMintedAt,omitempty"`
	// NextRotationAt is when the key rotates next, with an interval.
	NextRotationAt *metav1.Time `json:"nextRotationAt,omitempty"`
	// LastRotationRequest is the keyRotation.rotationRequest handled last.
	LastRotationRequest string `json:"lastRotationRequest,omitempty"`
}

// A ServiceAccountSpec defines the desired state of a ServiceAccount.
// +kubebuilder:validation:XValidation:rule="has(self.writeConnectionSecretToRef)",message="a ServiceAccount needs spec.writeConnectionSecretToRef: its key (token) and endpoint are written only there"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerConfigRef) || (has(self.providerConfigRef) && self.providerConfigRef == oldSelf.providerConfigRef)",message="spec.providerConfigRef cannot change: a managed resource stays with the server and config it was made with (delete it, leaving its object with managementPolicies without Delete, and import the object through the other config)"
type ServiceAccountSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`

	ForProvider ServiceAccountParameters `json:"forProvider"`
}

// Keys of a ServiceAccount's connection Secret: the active key, and the
// server's endpoint. A provider config's credentials select the token key.
const (
	ServiceAccountSecretKeyToken    = "token"
	ServiceAccountSecretKeyEndpoint = "endpoint"
)

// A ServiceAccountStatus represents the observed state of a ServiceAccount.
type ServiceAccountStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	AtProvider ServiceAccountObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A ServiceAccount is a terdut service account and its active key, written to
// the connection Secret as "token" (and "endpoint"). With bootstrap it opens
// a fresh server. Its external name is the account ID.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="SCOPE",type="string",JSONPath=".spec.forProvider.scope"
// +kubebuilder:printcolumn:name="KEY-ID",type="integer",JSONPath=".status.atProvider.activeKeyId",priority=1
// +kubebuilder:printcolumn:name="NEXT-ROTATION",type="date",JSONPath=".status.atProvider.nextRotationAt",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,terdut}
// +kubebuilder:validation:XValidation:rule="!has(self.spec.forProvider.bootstrap) || !has(self.spec.writeConnectionSecretToRef) || self.spec.writeConnectionSecretToRef.name != self.metadata.name + '-bootstrap-admin'",message="with bootstrap, spec.writeConnectionSecretToRef.name may not be <metadata.name>-bootstrap-admin: the bootstrap keeps its admin key in a Secret of that name until the account's own key is written"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.writeConnectionSecretToRef) || self.spec.writeConnectionSecretToRef.name != self.metadata.name + '-bootstrap-admin' || (has(oldSelf.spec.writeConnectionSecretToRef) && oldSelf.spec.writeConnectionSecretToRef.name == self.spec.writeConnectionSecretToRef.name)",message="spec.writeConnectionSecretToRef.name cannot change to <metadata.name>-bootstrap-admin, the name of this ServiceAccount's bootstrap checkpoint (which may still hold an admin key)"
type ServiceAccount struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceAccountSpec   `json:"spec"`
	Status ServiceAccountStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceAccountList contains a list of ServiceAccount.
type ServiceAccountList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ServiceAccount `json:"items"`
}

// Service-account scopes (terdut-server's own words).
const (
	// ScopeInstance may manage teams and service accounts.
	ScopeInstance = "instance"
	// ScopeTeam may touch its own team's objects only.
	ScopeTeam = "team"
)

// ResolveReferences resolves a team-scoped account's team.
func (mg *ServiceAccount) ResolveReferences(ctx context.Context, c client.Reader) error {
	p := &mg.Spec.ForProvider
	if p.Scope != ScopeTeam {
		return nil
	}
	return resolveTeamID(ctx, c, mg, &p.TeamID, &p.TeamIDRef, &p.TeamIDSelector)
}
