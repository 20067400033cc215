package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// TeamParameters are the team's desired state on terdut-server.
type TeamParameters struct {
	// DisplayName is the team's name on terdut-server, unique there.
	// Changing it renames the team in place; the team keeps its ID.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	DisplayName string `json:"displayName"`

	// OIDC maps identity-provider groups to the team's members and owners.
	// Membership itself follows these groups at login; it is not managed
	// here. Left out, the provider leaves the server's mapping alone.
	// +optional
	OIDC *TeamOIDC `json:"oidc,omitempty"`

	// KeyRotation says when the team's scoped key (the one the provider
	// mints for the team's EscalationPolicy, DeadmanSwitches and
	// Integrations, and keeps in its own namespace) is rotated: a new key
	// is minted and written in place, then the old one revoked. Unset, or
	// without an interval: every 720h. Rotation needs the Update
	// management policy.
	// +optional
	KeyRotation *KeyRotation `json:"keyRotation,omitempty"`
}

// DefaultTeamKeyRotation is how often a team's scoped key is rotated when
// its Team says nothing else.
const DefaultTeamKeyRotation = 720 * time.Hour

// TeamOIDC maps OIDC groups to a team. An empty group clears the mapping.
type TeamOIDC struct {
	// MemberGroup is the OIDC group whose members join the team.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	MemberGroup string `json:"memberGroup,omitempty"`

	// OwnerGroup is the OIDC group whose members own the team.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	OwnerGroup string `json:"ownerGroup,omitempty"`
}

// TeamObservation is the team as terdut-server last reported it.
type TeamObservation struct {
	// ID is the team's server ID; children reference the team by it.
	ID int64 `json:"id,omitempty"`

	// DisplayName is the team's name on the server.
	DisplayName string `json:"displayName,omitempty"`

	// OIDC is the server's group mapping.
	OIDC TeamOIDC `json:"oidc,omitempty"`

	// CreatedAt is when the server created the team.
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`

	// PreviousIDs are the IDs of teams this Team held before they were
	// found gone from the server and made again (newest last). A child
	// whose teamIdRef names this Team and whose teamId is one of them
	// follows it to the new ID.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	PreviousIDs []int64 `json:"previousIds,omitempty"`

	// Key is the team's scoped key as last seen; unset until a child of
	// the team needed one.
	// +optional
	Key *TeamKeyObservation `json:"key,omitempty"`
}

// TeamKeyObservation is the team's scoped key (never the key itself).
type TeamKeyObservation struct {
	// MintedAt is when the key in use was minted.
	MintedAt *metav1.Time `json:"mintedAt,omitempty"`
	// NextRotationAt is when it will be rotated next.
	NextRotationAt *metav1.Time `json:"nextRotationAt,omitempty"`
	// LastRotationRequest is the keyRotation.rotationRequest last handled.
	LastRotationRequest string `json:"lastRotationRequest,omitempty"`
}

// A TeamSpec defines the desired state of a Team.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerConfigRef) || (has(self.providerConfigRef) && self.providerConfigRef == oldSelf.providerConfigRef)",message="spec.providerConfigRef cannot change: a managed resource stays with the server and config it was made with (delete it, leaving its object with managementPolicies without Delete, and import the object through the other config)"
type TeamSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`

	ForProvider TeamParameters `json:"forProvider"`
}

// A TeamStatus represents the observed state of a Team.
type TeamStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	AtProvider TeamObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Team is a team on terdut-server. Its external name is the server's team
// ID. Create looks the name up first and adopts a team of that name, so a
// crash between the server's answer and recording the ID makes no duplicate.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="DISPLAY-NAME",type="string",JSONPath=".spec.forProvider.displayName"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,terdut}
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TeamSpec   `json:"spec"`
	Status TeamStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TeamList contains a list of Team.
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Team `json:"items"`
}
