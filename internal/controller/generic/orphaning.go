package generic

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
)

// Orphaning runs Before on an MR that is deleted while its management
// policies leave out Delete, before the inner reconciler sees it:
// crossplane-runtime then removes its finalizer without connecting, so
// nothing of the kind's external client (Observe included) runs for it. An
// error from Before keeps the finalizer, and the request is retried.
type Orphaning[M resource.Managed] struct {
	Inner  reconcile.Reconciler
	Kube   client.Reader
	New    func() M
	Before func(ctx context.Context, mg M) error
}

// Reconcile implements reconcile.Reconciler.
func (o Orphaning[M]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mg := o.New()
	if err := o.Kube.Get(ctx, req.NamespacedName, mg); err == nil && meta.WasDeleted(mg) &&
		!credentials.Allows(mg, xpv2.ManagementActionDelete) && meta.FinalizerExists(mg, managed.FinalizerName) {
		if err := o.Before(ctx, mg); err != nil {
			return reconcile.Result{}, err
		}
	}
	return o.Inner.Reconcile(ctx, req)
}
