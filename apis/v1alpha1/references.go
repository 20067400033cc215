package v1alpha1

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// NOTE: these resolvers are written by hand rather than generated: a team
// reference is deliberately an xpv2.Reference, which has no namespace field,
// so a child can only ever resolve a Team in its own namespace (a teamRef
// never crosses namespaces) and the CRD does not even offer the
// field. angryjet would generate namespaced references that could cross.

const (
	errResolveTeamID = "cannot resolve spec.forProvider.teamId"
	errNotManaged    = "not a managed resource"
)

// managed converts o to resource.Managed at run time. NOTE: the conversion is
// dynamic on purpose: the generated methods that make these types managed
// resources do not exist yet when angryjet type-checks this package to write
// them.
func managed(o any) (resource.Managed, bool) {
	m, ok := o.(resource.Managed)
	return m, ok
}

// resolveTeamID resolves a teamId from a Team's external name (its server ID)
// in mg's own namespace.
func resolveTeamID(ctx context.Context, c client.Reader, o any, id **int64, ref **xpv2.Reference, sel **xpv2.Selector) error {
	mg, ok1 := managed(o)
	team, ok2 := managed(&Team{})
	list, ok3 := any(&TeamList{}).(resource.ManagedList)
	if !ok1 || !ok2 || !ok3 {
		return errors.New(errNotManaged)
	}
	if err := followRecreatedTeam(ctx, c, mg.GetNamespace(), id, *ref); err != nil {
		return errors.Wrap(err, errResolveTeamID)
	}
	rsp, err := reference.NewAPIResolver(c, mg).Resolve(ctx, reference.ResolutionRequest{
		CurrentValue: reference.FromIntPtrValue(*id),
		Reference:    *ref,
		Selector:     *sel,
		To:           reference.To{Managed: team, List: list},
		Extract:      reference.ExternalName(),
		Namespace:    mg.GetNamespace(),
	})
	if err != nil {
		return errors.Wrap(err, errResolveTeamID)
	}
	*id = reference.ToIntPtrValue(rsp.ResolvedValue)
	*ref = rsp.ResolvedReference
	return nil
}

// followRecreatedTeam clears *id when the Team ref names holds a new team in
// its place (its previousIds list *id): the team was found gone from the
// server and made again, so the child follows it. Nothing else moves a
// resolved teamId.
func followRecreatedTeam(ctx context.Context, c client.Reader, ns string, id **int64, ref *xpv2.Reference) error {
	if *id == nil || ref == nil || ref.Name == "" {
		return nil
	}
	t := &Team{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, t); err != nil {
		return client.IgnoreNotFound(err)
	}
	if slices.Contains(t.Status.AtProvider.PreviousIDs, **id) && t.Status.AtProvider.ID != 0 && t.Status.AtProvider.ID != **id {
		*id = nil
	}
	return nil
}

// ResolveReferences resolves the policy's team.
func (mg *EscalationPolicy) ResolveReferences(ctx context.Context, c client.Reader) error {
	p := &mg.Spec.ForProvider
	return resolveTeamID(ctx, c, mg, &p.TeamID, &p.TeamIDRef, &p.TeamIDSelector)
}

// ResolveReferences resolves the switch's team.
func (mg *DeadmanSwitch) ResolveReferences(ctx context.Context, c client.Reader) error {
	p := &mg.Spec.ForProvider
	return resolveTeamID(ctx, c, mg, &p.TeamID, &p.TeamIDRef, &p.TeamIDSelector)
}

// ResolveReferences resolves the integration's team.
func (mg *Integration) ResolveReferences(ctx context.Context, c client.Reader) error {
	p := &mg.Spec.ForProvider
	return resolveTeamID(ctx, c, mg, &p.TeamID, &p.TeamIDRef, &p.TeamIDSelector)
}
