package generic

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// Reasons of the ownership checks.
const (
	// ReasonTeamNotInNamespace: a child names a team that is not a Team of
	// its own namespace using the same provider config.
	ReasonTeamNotInNamespace xpv2.ConditionReason = "TeamNotInNamespace"
)

const (
	errListManagers = "cannot list managed resources to check ownership"
	errNotOwned     = "%s %s is already managed by %s %s/%s on the same terdut-server: one server object is managed by one managed resource only; nothing was written"
	errForeignTeam  = "team %d is not a Team of namespace %q on the same terdut-server: a %s may only belong to a team managed in its own namespace; nothing was written"
	errTeamMoved    = "this resource's object was observed in team %d, and its teamId is now %d: deleting it touches neither team"
)

// OwnershipGate refuses an MR whose (perhaps hand-set) external name is
// another MR's object, and a child whose team is not a Team of its own
// namespace using the same provider config. teamOf is nil for kinds that
// belong to no team.
//
// observedTeam (nil for none) is the team a child last observed its object
// in: a child being deleted whose team is no longer that one (its teamId
// edited) is refused, and so touches nothing and gets no team's key.
func OwnershipGate[M resource.ModernManaged](o Owners, teamOf func(M) (int64, bool), observedTeam func(M) int64) Gate[M] {
	return func(ctx context.Context, mg M, _ credentials.Config) error {
		if err := o.CheckExternalName(ctx, mg); err != nil || teamOf == nil {
			return err
		}
		id, ok := teamOf(mg)
		if !ok {
			return nil
		}
		if observedTeam != nil && meta.WasDeleted(mg) && o.holds(mg) {
			if seen := observedTeam(mg); seen != 0 && seen != id {
				return o.refuse(mg, ReasonTeamNotInNamespace, fmt.Sprintf(errTeamMoved, seen, id))
			}
		}
		err := o.CheckTeam(ctx, mg, id)
		if err != nil && extclient.IsNotOwned(err) && meta.WasDeleted(mg) && o.holds(mg) {
			// NOTE: a child that observed its object while its team was
			// a Team of its namespace deletes it, even once that Team
			// was orphaned (its policies without Delete) or moved to
			// another config: its webhook must not go on working.
			return nil
		}
		return err
	}
}

// sameServer reports whether two MRs talk to the same terdut-server: the
// same provider config, or two whose endpoints are the same. Server IDs are
// the server's, so ownership is too: two ClusterProviderConfigs of one
// server must not let one namespace's Team adopt another's. A config that
// cannot be read counts as the same server (fail closed: its MR may hold
// the object).
func (o Owners) sameServer(ctx context.Context, a, b resource.Managed) (bool, error) {
	same, _, err := o.serverOf(ctx, a, b)
	return same, err
}

// serverOf is sameServer, and whether b's server is only assumed to be a's
// (its config cannot be read): such an MR may keep another from an object,
// but is never shown to hold one.
func (o Owners) serverOf(ctx context.Context, a, b resource.Managed) (same, assumed bool, err error) {
	ma, okA := a.(resource.ModernManaged)
	mb, okB := b.(resource.ModernManaged)
	if !okA || !okB {
		return false, false, nil
	}
	ra, rb := ma.GetProviderConfigReference(), mb.GetProviderConfigReference()
	if ra == nil || rb == nil {
		return ra == nil && rb == nil, false, nil
	}
	if *ra == *rb && (ra.Kind == v1alpha1.ClusterProviderConfigKind || a.GetNamespace() == b.GetNamespace()) {
		return true, false, nil
	}
	ca, err := credentials.ResolveProviderConfig(ctx, o.Kube, ma)
	if err != nil {
		return false, false, errors.Wrap(err, errListManagers)
	}
	cb, err := credentials.ResolveProviderConfig(ctx, o.Kube, mb)
	if err != nil {
		return true, true, nil //nolint:nilerr // Unreadable: taken as the same server, see above.
	}
	return SameEndpoint(ca.Spec.Endpoint, cb.Spec.Endpoint), false, nil
}

// SameEndpoint reports whether two endpoints name the same server (see
// terdut.NormalEndpoint).
func SameEndpoint(a, b string) bool {
	return terdut.NormalEndpoint(a) == terdut.NormalEndpoint(b)
}

// precedes says whether a was there first: older, then by namespace/name.
func precedes(a, b resource.Managed) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
}

// Owners finds the managed resources that manage a server object, through
// the cache's external-name index (IndexExternalName).
type Owners struct {
	Kube    client.Reader
	NewList func() resource.ManagedList
	Kind    string
	// Naive lists every MR of the kind instead: the benchmark's
	// side-by-side "before", honoured only in a -tags bench build.
	Naive bool
	// Observed is the server ID an MR of the kind last observed (its
	// status, which tenants cannot write); nil when unknown.
	Observed func(resource.Managed) int64
}

// holds reports whether mg observed the object its external name names.
func (o Owners) holds(mg resource.Managed) bool {
	return o.Observed != nil && extclient.FormatID(o.Observed(mg)) == meta.GetExternalName(mg)
}

// outranks says whether a's claim on a server object (the same external
// name, the same provider config) comes before b's: one that observed the
// object beats one that did not (a hand-set external name of an object
// another MR manages); between equals the older MR wins.
func (o Owners) outranks(a, b resource.Managed) bool {
	if ha, hb := o.holds(a), o.holds(b); ha != hb {
		return ha
	}
	return precedes(a, b)
}

// byExternalName selects MRs by external name: through the index, or, for
// the naive benchmark, not at all (the caller filters).
func (o Owners) byExternalName(en string) []client.ListOption {
	if benchmarkBuild && o.Naive {
		return nil
	}
	return []client.ListOption{client.MatchingFields{IndexExternalName: en}}
}

// Other returns another MR of the kind, on mg's server, whose external
// name is externalName: the one whose claim ranks first (one that observed
// the object before one that only names it, then the oldest). With
// firstOnly, only one that outranks mg. Nil when there is none.
func (o Owners) Other(ctx context.Context, mg resource.Managed, externalName string, firstOnly bool) (resource.Managed, error) {
	l := o.NewList()
	if err := o.Kube.List(ctx, l, o.byExternalName(externalName)...); err != nil {
		return nil, errors.Wrap(err, errListManagers)
	}
	var best resource.Managed
	for _, other := range l.GetItems() {
		if other.GetUID() == mg.GetUID() || meta.GetExternalName(other) != externalName {
			continue
		}
		if same, err := o.sameServer(ctx, mg, other); err != nil || !same {
			if err != nil {
				return nil, err
			}
			continue
		}
		if firstOnly && !o.outranks(other, mg) {
			continue
		}
		if best == nil || o.outranks(other, best) {
			best = other
		}
	}
	return best, nil
}

// refuse records an ownership refusal on mg and returns it as an error.
func (o Owners) refuse(mg resource.Managed, reason xpv2.ConditionReason, msg string) error {
	return extclient.NotOwned(mg, reason, msg)
}

// Adoptable returns the Create-time check for mg: no other MR may already
// manage the object it is about to adopt.
func (o Owners) Adoptable(mg resource.Managed) extclient.Adoptable {
	return func(ctx context.Context, id int64) error {
		other, err := o.Other(ctx, mg, extclient.FormatID(id), false)
		if err != nil || other == nil {
			return err
		}
		return o.refuse(mg, extclient.ReasonResourceNotOwned, fmt.Sprintf(errNotOwned, o.Kind, extclient.FormatID(id), o.Kind, other.GetNamespace(), other.GetName()))
	}
}

// CheckExternalName refuses mg when its (perhaps hand-set) external name is
// an object another MR was managing first.
func (o Owners) CheckExternalName(ctx context.Context, mg resource.Managed) error {
	en := meta.GetExternalName(mg)
	if en == "" {
		return nil
	}
	other, err := o.Other(ctx, mg, en, true)
	if err != nil || other == nil {
		return err
	}
	return o.refuse(mg, extclient.ReasonResourceNotOwned, fmt.Sprintf(errNotOwned, o.Kind, en, o.Kind, other.GetNamespace(), other.GetName()))
}

// CheckTeam refuses a child whose team is not a Team MR of its own namespace
// using the same provider config that holds that team: it observed it, and
// no other Team outranks it. (A Team of one's namespace with the hand-set
// external name of another tenant's team is refused itself, and must not
// open that team to children.)
func (o Owners) CheckTeam(ctx context.Context, mg resource.Managed, teamID int64) error {
	holder, err := o.OwnTeam(ctx, mg, teamID)
	if err != nil || holder != nil {
		return err
	}
	return o.refuse(mg, ReasonTeamNotInNamespace, fmt.Sprintf(errForeignTeam, teamID, mg.GetNamespace(), o.Kind))
}

// OwnTeam returns the Team MR of mg's namespace, on mg's server, that holds
// team teamID (it observed it, and no other Team outranks it); nil when
// there is none. Its team's scoped key is that Team's: minted for its
// children while it lives, revoked when it goes.
func (o Owners) OwnTeam(ctx context.Context, mg resource.Managed, teamID int64) (*v1alpha1.Team, error) {
	teams := &v1alpha1.TeamList{}
	if err := o.Kube.List(ctx, teams, o.byExternalName(extclient.FormatID(teamID))...); err != nil {
		return nil, errors.Wrap(err, errListManagers)
	}
	ranks := teamOwners()
	var holder *v1alpha1.Team
	holderAssumed := false
	for i := range teams.Items {
		t := &teams.Items[i]
		if meta.GetExternalName(t) != extclient.FormatID(teamID) {
			continue
		}
		same, assumed, err := o.serverOf(ctx, mg, t)
		if err != nil {
			return nil, err
		}
		if !same {
			continue
		}
		if holder == nil || ranks.outranks(t, holder) {
			holder, holderAssumed = t, assumed
		}
	}
	// NOTE: a Team whose provider config cannot be read may be on this
	// server, so it keeps the others from the team; but it is never the
	// holder: its team's key would be minted for its children on a server
	// nobody showed it to be on.
	if holder != nil && !holderAssumed && holder.GetNamespace() == mg.GetNamespace() && ranks.holds(holder) {
		return holder, nil
	}
	return nil, nil //nolint:nilnil // No Team holds it: a state, not an error.
}

// teamOwners are Owners that tell a Team holding its server object (it
// observed the object its external name names) from one that does not.
func teamOwners() Owners {
	return Owners{Observed: func(mg resource.Managed) int64 {
		if t, ok := mg.(*v1alpha1.Team); ok {
			return t.Status.AtProvider.ID
		}
		return 0
	}}
}

// untouched is the external client of an MR being deleted that has nothing
// of its own on the server: refused by an ownership check, or a child whose
// team is already gone (or was never known). It reports nothing to delete
// and the finalizer goes without a request to the server.
type untouched[M resource.Managed] struct{}

func (untouched[M]) Observe(context.Context, M) (managed.ExternalObservation, error) {
	return managed.ExternalObservation{}, nil
}

func (untouched[M]) Create(context.Context, M) (managed.ExternalCreation, error) {
	return managed.ExternalCreation{}, nil
}

func (untouched[M]) Update(context.Context, M) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, nil
}

func (untouched[M]) Delete(context.Context, M) (managed.ExternalDelete, error) {
	return managed.ExternalDelete{}, nil
}
func (untouched[M]) Disconnect(context.Context) error { return nil }
