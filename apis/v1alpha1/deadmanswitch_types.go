package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// DeadmanSwitchParameters are one dead man's switch of a team.
// +kubebuilder:validation:XValidation:rule="has(self.teamId) || has(self.teamIdRef) || has(self.teamIdSelector)",message="set teamId, teamIdRef or teamIdSelector"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.teamId) || (!has(self.teamIdRef) && !has(self.teamIdSelector))",message="set either teamId or teamIdRef/teamIdSelector, not both",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.teamId) || (has(self.teamId) && (self.teamId == oldSelf.teamId || has(self.teamIdRef)))",message="teamId is immutable (it follows teamIdRef only when that Team was made again on the server): a switch belongs to one team; create a new DeadmanSwitch for another team"
type DeadmanSwitchParameters struct {
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

	// Name of the switch. Left empty, the server derives it from the
	// matcher's canonical form (its label=value pairs sorted and joined by
	// ","), and that derived name is what the provider matches on. Switch
	// names are not unique on the server: give switches of one team
	// distinct names.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// Matcher selects the heartbeat alert: comma-separated label=value
	// pairs, e.g. "alertname=Watchdog,cluster=prod".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=[^,]*(,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=[^,]*)*$`
	Matcher string `json:"matcher"`

	// Timeout after the last heartbeat before the switch fires, as a Go
	// duration ("15m").
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="timeout must be a duration greater than zero, e.g. 15m"
	Timeout string `json:"timeout"`

	// Severity of the alert raised when the switch fires.
	// +optional
	// +kubebuilder:default=critical
	// +kubebuilder:validation:Enum=critical;warning;info
	Severity string `json:"severity,omitempty"`
}

// DeadmanSwitchObservation is the switch as the server last reported it.
type DeadmanSwitchObservation struct {
	// ID is the switch's server ID.
	ID int64 `json:"id,omitempty"`
	// TeamID is the team the switch belongs to.
	TeamID int64 `json:"teamId,omitempty"`
	// Name on the server, derived from the matcher when the spec has none.
	Name string `json:"name,omitempty"`
	// Matcher on the server.
	Matcher string `json:"matcher,omitempty"`
	// Timeout on the server.
	Timeout string `json:"timeout,omitempty"`
	// Severity on the server.
	Severity string `json:"severity,omitempty"`
	// ReplacedIDs are the objects this resource took as gone from the
	// server (after confirming it) and made again in their place, newest
	// last. One that shows up again is reported: a Warning
	// PredecessorReturned, each poll.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	ReplacedIDs []int64 `json:"replacedIds,omitempty"`
}

// A DeadmanSwitchSpec defines the desired state of a DeadmanSwitch.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerConfigRef) || (has(self.providerConfigRef) && self.providerConfigRef == oldSelf.providerConfigRef)",message="spec.providerConfigRef cannot change: a managed resource stays with the server and config it was made with (delete it, leaving its object with managementPolicies without Delete, and import the object through the other config)"
type DeadmanSwitchSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`

	ForProvider DeadmanSwitchParameters `json:"forProvider"`
}

// A DeadmanSwitchStatus represents the observed state of a DeadmanSwitch.
type DeadmanSwitchStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	AtProvider DeadmanSwitchObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A DeadmanSwitch raises an alert when a heartbeat alert stops arriving. Its
// external name is the switch ID. The server has no unique switch names, so
// Create lists the team's switches and adopts one of the same name first.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="MATCHER",type="string",JSONPath=".spec.forProvider.matcher"
// +kubebuilder:printcolumn:name="TIMEOUT",type="string",JSONPath=".spec.forProvider.timeout",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,terdut}
type DeadmanSwitch struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DeadmanSwitchSpec   `json:"spec"`
	Status DeadmanSwitchStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DeadmanSwitchList contains a list of DeadmanSwitch.
type DeadmanSwitchList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []DeadmanSwitch `json:"items"`
}
