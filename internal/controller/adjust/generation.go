package adjust

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// generationKeeper is an MR with status.observedGeneration.
type generationKeeper interface {
	SetObservedGeneration(g int64)
}

// generations keeps status.observedGeneration: set to the MR's
// generation once a reconcile of it succeeded — the server object is as that
// spec says (Observe found it up to date, or Update made it so) — and never
// otherwise, so `kubectl wait` and GitOps tools can tell a spec that was
// applied from one that was only accepted.
type generations[M resource.Managed] struct {
	managed.TypedExternalClient[M]
}

// KeepingGenerations is e keeping status.observedGeneration (generations).
func KeepingGenerations[M resource.Managed](e managed.TypedExternalClient[M]) managed.TypedExternalClient[M] {
	return generations[M]{TypedExternalClient: e}
}

func observedGeneration(mg resource.Managed) {
	if k, ok := mg.(generationKeeper); ok && !meta.WasDeleted(mg) {
		k.SetObservedGeneration(mg.GetGeneration())
	}
}

func (e generations[M]) Observe(ctx context.Context, mg M) (managed.ExternalObservation, error) {
	o, err := e.TypedExternalClient.Observe(ctx, mg)
	if err == nil && o.ResourceExists && o.ResourceUpToDate {
		observedGeneration(mg)
	}
	return o, err
}

func (e generations[M]) Update(ctx context.Context, mg M) (managed.ExternalUpdate, error) {
	u, err := e.TypedExternalClient.Update(ctx, mg)
	if err == nil {
		observedGeneration(mg)
	}
	return u, err
}
