package v1alpha1

import xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

// The children of a team (EscalationPolicy, DeadmanSwitch, Integration)
// say which team their spec names (SpecTeam: its server ID, nil until set
// or resolved, and its Team reference) and which team they last observed
// their object in (ObservedTeam; 0 before they did).

// SpecTeam is the team the policy's spec names.
func (mg *EscalationPolicy) SpecTeam() (*int64, *xpv2.Reference) {
	return mg.Spec.ForProvider.TeamID, mg.Spec.ForProvider.TeamIDRef
}

// ObservedTeam is the team the policy was last observed in.
func (mg *EscalationPolicy) ObservedTeam() int64 { return mg.Status.AtProvider.TeamID }

// SpecTeam is the team the switch's spec names.
func (mg *DeadmanSwitch) SpecTeam() (*int64, *xpv2.Reference) {
	return mg.Spec.ForProvider.TeamID, mg.Spec.ForProvider.TeamIDRef
}

// ObservedTeam is the team the switch was last observed in.
func (mg *DeadmanSwitch) ObservedTeam() int64 { return mg.Status.AtProvider.TeamID }

// SpecTeam is the team the integration's spec names.
func (mg *Integration) SpecTeam() (*int64, *xpv2.Reference) {
	return mg.Spec.ForProvider.TeamID, mg.Spec.ForProvider.TeamIDRef
}

// ObservedTeam is the team the integration was last observed in.
func (mg *Integration) ObservedTeam() int64 { return mg.Status.AtProvider.TeamID }
