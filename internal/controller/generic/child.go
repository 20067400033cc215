package generic

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// A TeamChild belongs to one team: its spec names the team, by server ID or
// by a Team of its namespace, and its status records the team it last
// observed its object in.
type TeamChild interface {
	// SpecTeam is the team the spec names: its server ID (nil until set or
	// resolved) and its Team reference (nil if none).
	SpecTeam() (id *int64, ref *xpv2.Reference)
	// ObservedTeam is the team the MR last observed its object in; 0
	// before it did.
	ObservedTeam() int64
}

// A TeamChildKind is a managed-resource kind that belongs to one team.
type TeamChildKind interface {
	resource.ModernManaged
	TeamChild
}

var (
	_ TeamChildKind = &v1alpha1.EscalationPolicy{}
	_ TeamChildKind = &v1alpha1.DeadmanSwitch{}
	_ TeamChildKind = &v1alpha1.Integration{}
)

// ChildOfTeam is k with what every kind that belongs to a team shares: its
// team is the one its spec names, or the one it observed (TeamOf), that
// team must be a Team of its namespace (ObservedTeam, TeamRefs), and it
// talks to the server with that team's scoped key, never the instance key
// (Credentials).
func ChildOfTeam[M TeamChildKind](k Kind[M]) Kind[M] {
	k.TeamOf = TeamOfChild[M]
	k.ObservedTeam = func(mg M) int64 { return mg.ObservedTeam() }
	k.TeamRefs = func(mg M) []string {
		id, ref := mg.SpecTeam()
		return TeamRefKeys(ref, id)
	}
	k.Credentials = credentials.TeamKey(TeamOfChild[M])
	return k
}

// TeamOfChild is the team mg belongs to once known: the one its spec names,
// else the one it observed its object in.
func TeamOfChild[M TeamChild](mg M) (int64, bool) {
	id, _ := mg.SpecTeam()
	return extclient.KnownTeam(id, mg.ObservedTeam())
}
