package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// IntegrationParameters are one alert source of a team.
// +kubebuilder:validation:XValidation:rule="has(self.teamId) || has(self.teamIdRef) || has(self.teamIdSelector)",message="set teamId, teamIdRef or teamIdSelector"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.teamId) || (!has(self.teamIdRef) && !has(self.teamIdSelector))",message="set either teamId or teamIdRef/teamIdSelector, not both",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.teamId) || (has(self.teamId) && (self.teamId == oldSelf.teamId || has(self.teamIdRef)))",message="teamId is immutable (it follows teamIdRef only when that Team was made again on the server): an integration belongs to one team; create a new Integration for another team"
type IntegrationParameters struct {
	// TeamID is the server ID of the team. Set it, or let teamIdRef or
	// teamIdSelector resolve it from a Team in this namespace.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TeamID *int64 `json:"teamId,omitempty"`

	// TeamIDRef names a Team in this namespace.
	// +optional
	TeamIDRef *xpv2.Reference `json:"teamIdRef,omitempty"`

	// TeamIDSelector selects a Team in this namespace by labels.
	// +optional
	TeamIDSelector *xpv2.Selector `json:"teamIdSelector,omitempty"`

	// Kind of alert source. CHANGING IT ROTATES THE KEY: the server cannot
	// change a kind in place, so the integration is deleted and created
	// anew, with a new webhook URL and key written to the connection
	// Secret; senders fail until they read the new Secret.
	// +optional
	// +kubebuilder:default=alertmanager
	// +kubebuilder:validation:Enum=alertmanager;grafana;webhook
	Kind string `json:"kind,omitempty"`

	// Name of the integration on the server. Changing it renames it in
	// place; URL and key stay.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`
}

// IntegrationObservation is the integration as the server last reported it.
// Its URL and key are never here: they are in the connection Secret only.
type IntegrationObservation struct {
	// ID is the integration's server ID.
	ID int64 `json:"id,omitempty"`
	// TeamID is the team the integration belongs to.
	TeamID int64 `json:"teamId,omitempty"`
	// Kind on the server.
	Kind string `json:"kind,omitempty"`
	// Name on the server.
	Name string `json:"name,omitempty"`
	// ReplacedIDs are the objects this resource took as gone from the
	// server (after confirming it) and made again in their place, newest
	// last. One that shows up again is reported: a Warning
	// PredecessorReturned, each poll.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	ReplacedIDs []int64 `json:"replacedIds,omitempty"`
}

// An IntegrationSpec defines the desired state of an Integration.
// +kubebuilder:validation:XValidation:rule="has(self.writeConnectionSecretToRef)",message="an Integration needs spec.writeConnectionSecretToRef: its webhook url and key are shown once, and written only to that Secret"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.writeConnectionSecretToRef) || (has(self.writeConnectionSecretToRef) && self.writeConnectionSecretToRef.name == oldSelf.writeConnectionSecretToRef.name)",message="writeConnectionSecretToRef is immutable: the key cannot be read again to write it elsewhere"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerConfigRef) || (has(self.providerConfigRef) && self.providerConfigRef == oldSelf.providerConfigRef)",message="spec.providerConfigRef cannot change: a managed resource stays with the server and config it was made with (delete it, leaving its object with managementPolicies without Delete, and import the object through the other config)"
type IntegrationSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`

	ForProvider IntegrationParameters `json:"forProvider"`
}

// An IntegrationStatus represents the observed state of an Integration.
type IntegrationStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	AtProvider IntegrationObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// An Integration is an alert source of a team, e.g. an Alertmanager webhook.
// Its external name is the integration ID. The server shows its webhook URL
// and key only once, so Create writes them (keys "url" and "key") to the
// connection Secret before it returns. If that Secret is lost while the
// integration exists the Integration turns Ready=False, reason
// WebhookSecretLost, and no new key is minted: delete and recreate the
// Integration to get a new one.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="KIND",type="string",JSONPath=".spec.forProvider.kind"
// +kubebuilder:printcolumn:name="SECRET",type="string",JSONPath=".spec.writeConnectionSecretToRef.name",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,terdut}
type Integration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IntegrationSpec   `json:"spec"`
	Status IntegrationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// IntegrationList contains a list of Integration.
type IntegrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Integration `json:"items"`
}
