package generic

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

const errResolveReferences = "cannot resolve references"

// resolvable is an MR with references (the generated ResolveReferences).
type resolvable interface {
	resource.Managed
	ResolveReferences(ctx context.Context, r client.Reader) error
}

// References resolves an MR's references as crossplane-runtime's
// APISimpleReferenceResolver does (and through it when something changed),
// but finds out that nothing changed - every reconcile but the first - with
// a semantic DeepEqual of a resolved copy instead of go-cmp, which allocated
// 40% of the provider's memory churn at 1,000 MRs (make bench-scale).
//
// An MR that has made nothing on the server yet (no external name) is
// resolved in memory only: the reconcile goes on to Create, and the
// external-create-pending update crossplane-runtime sends before it carries
// the resolved fields with it, so they are written once, not in an update
// of their own a moment earlier (at 5,000 MRs, 3,750 fewer writes to the API
// server, which is what the time to Ready waits on). A reconcile that
// creates nothing (a refused or failed create) writes nothing; the next one
// resolves them again.
//
// A child whose team reference does not resolve says why, as its Ready
// condition: WaitingForTeam, naming the Team and what that Team waits for
// (not created yet, or refused with its own reason).
type References struct {
	Reader client.Reader
	// Patch resolves and writes the references when they changed.
	Patch managed.ReferenceResolver
	// TeamRef is the name of the Team a child's teamIdRef names ("" for
	// none, and for kinds of no team: nil).
	TeamRef func(resource.Managed) string
}

const (
	msgNoTeamYet    = "waiting for Team %q (spec.forProvider.teamIdRef), which does not exist in namespace %q"
	msgTeamNoID     = "waiting for Team %q (spec.forProvider.teamIdRef) to get its team's ID from the server"
	msgTeamNoIDWhy  = msgTeamNoID + ": it is %s, %s: %s"
	msgTeamDeleting = "Team %q (spec.forProvider.teamIdRef) is being deleted"
)

// waitingForTeam sets mg's Ready condition to what its team reference waits
// for, when it names a Team that holds no team yet.
func (r References) waitingForTeam(ctx context.Context, mg resource.Managed) {
	if r.TeamRef == nil {
		return
	}
	name := r.TeamRef(mg)
	if name == "" {
		return
	}
	t := &v1alpha1.Team{}
	err := r.Reader.Get(ctx, types.NamespacedName{Namespace: mg.GetNamespace(), Name: name}, t)
	var msg string
	switch {
	case kerrors.IsNotFound(err):
		msg = fmt.Sprintf(msgNoTeamYet, name, mg.GetNamespace())
	case err != nil:
		return
	case meta.WasDeleted(t):
		msg = fmt.Sprintf(msgTeamDeleting, name)
	case meta.GetExternalName(t) != "":
		return
	default:
		msg = fmt.Sprintf(msgTeamNoID, name)
		if c := t.GetCondition(xpv2.TypeReady); c.Reason != "" {
			msg = fmt.Sprintf(msgTeamNoIDWhy, name, c.Status, c.Reason, c.Message)
		}
	}
	extclient.Mark(mg, extclient.Unavailable(credentials.ReasonWaitingForTeam, msg))
}

// ResolveReferences implements managed.ReferenceResolver.
func (r References) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	rr, ok := mg.(resolvable)
	if !ok {
		return nil
	}
	probe, ok := rr.DeepCopyObject().(resolvable)
	if !ok {
		return r.Patch.ResolveReferences(ctx, mg)
	}
	if err := probe.ResolveReferences(ctx, r.Reader); err != nil {
		r.waitingForTeam(ctx, mg)
		return errors.Wrap(err, errResolveReferences)
	}
	if equality.Semantic.DeepEqual(probe, mg) {
		return nil
	}
	if meta.GetExternalName(mg) == "" {
		return errors.Wrap(rr.ResolveReferences(ctx, r.Reader), errResolveReferences)
	}
	return r.Patch.ResolveReferences(ctx, mg)
}
