package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// EscalationPolicyParameters are a team's whole escalation policy.
// +kubebuilder:validation:XValidation:rule="has(self.teamId) || has(self.teamIdRef) || has(self.teamIdSelector)",message="set teamId, teamIdRef or teamIdSelector"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.teamId) || (!has(self.teamIdRef) && !has(self.teamIdSelector))",message="set either teamId or teamIdRef/teamIdSelector, not both",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.teamId) || (has(self.teamId) && (self.teamId == oldSelf.teamId || has(self.teamIdRef)))",message="teamId is immutable (it follows teamIdRef only when that Team was made again on the server): a policy belongs to one team; create a new EscalationPolicy for another team"
type EscalationPolicyParameters struct {
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

	// RepeatCount is how often the levels are walked again after the last
	// one times out.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RepeatCount int64 `json:"repeatCount"`

	// FallbackTopic is the notification topic paged when nobody
	// acknowledges.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FallbackTopic string `json:"fallbackTopic,omitempty"`

	// Levels are paged in order, each after the previous one's timeout.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Levels []EscalationLevel `json:"levels"`
}

// An EscalationLevel pages its targets and waits for its timeout.
type EscalationLevel struct {
	// Timeout before the next level is paged, as a Go duration ("5m").
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="timeout must be a duration greater than zero, e.g. 5m"
	Timeout string `json:"timeout"`

	// Targets paged at this level.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Targets []EscalationTarget `json:"targets"`
}

// An EscalationTarget is who a level pages: the team's current on-call, or a
// user by username (resolved to the user's ID at every reconcile, so a
// renamed user is picked up).
// +kubebuilder:validation:XValidation:rule="self.kind != 'user' || (has(self.username) && size(self.username) > 0)",message="a user target needs a username"
// +kubebuilder:validation:XValidation:rule="self.kind != 'oncall' || !has(self.username)",message="an oncall target takes no username"
type EscalationTarget struct {
	// Kind of target.
	// +kubebuilder:validation:Enum=oncall;user
	Kind string `json:"kind"`

	// Username of a user target.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Username string `json:"username,omitempty"`
}

// ObservedTarget is a target as the server stores it, with the username the
// provider resolved it from.
type ObservedTarget struct {
	Kind     string `json:"kind"`
	UserID   *int64 `json:"userId,omitempty"`
	Username string `json:"username,omitempty"`
}

// ObservedLevel is a level as the server stores it.
type ObservedLevel struct {
	Timeout string           `json:"timeout"`
	Targets []ObservedTarget `json:"targets,omitempty"`
}

// ResolvedUser is a username of the spec and the user ID it resolved to.
type ResolvedUser struct {
	Username string `json:"username"`
	ID       int64  `json:"id"`
}

// EscalationPolicyObservation is the policy as the server last reported it.
type EscalationPolicyObservation struct {
	// TeamID is the team the policy belongs to.
	TeamID int64 `json:"teamId,omitempty"`

	// RepeatCount on the server.
	RepeatCount int64 `json:"repeatCount,omitempty"`

	// FallbackTopic on the server.
	FallbackTopic string `json:"fallbackTopic,omitempty"`

	// Levels on the server.
	Levels []ObservedLevel `json:"levels,omitempty"`

	// TargetCount is how many targets the server's policy pages in all.
	TargetCount int64 `json:"targetCount,omitempty"`

	// ResolvedUsers are the spec's usernames and the IDs they resolved to at
	// the last reconcile.
	ResolvedUsers []ResolvedUser `json:"resolvedUsers,omitempty"`
}

// An EscalationPolicySpec defines the desired state of an EscalationPolicy.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerConfigRef) || (has(self.providerConfigRef) && self.providerConfigRef == oldSelf.providerConfigRef)",message="spec.providerConfigRef cannot change: a managed resource stays with the server and config it was made with (delete it, leaving its object with managementPolicies without Delete, and import the object through the other config)"
type EscalationPolicySpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`

	ForProvider EscalationPolicyParameters `json:"forProvider"`
}

// An EscalationPolicyStatus represents the observed state of an
// EscalationPolicy.
type EscalationPolicyStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	AtProvider EscalationPolicyObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// An EscalationPolicy is a team's whole escalation policy (one per team: two
// EscalationPolicies for one team overwrite each other). Its external name is
// the team ID. Deleting it writes an empty policy; there is no DELETE.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="TEAM-ID",type="integer",JSONPath=".spec.forProvider.teamId"
// +kubebuilder:printcolumn:name="TARGETS",type="integer",JSONPath=".status.atProvider.targetCount"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,terdut}
type EscalationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EscalationPolicySpec   `json:"spec"`
	Status EscalationPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EscalationPolicyList contains a list of EscalationPolicy.
type EscalationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []EscalationPolicy `json:"items"`
}
