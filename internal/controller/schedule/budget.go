package schedule

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// A Budget is when a controller's reconciles run: the reconcile budget
// (shared between namespaces, or first come, first served), the per-MR
// backoff, and how many workers one namespace may hold.
type Budget struct {
	// MaxBackoff caps how long an MR waits before it is reconciled again
	// after a reconcile that asked to be retried; zero is crossplane-
	// runtime's 60 s.
	MaxBackoff time.Duration

	// Share is the reconcile budget, shared between namespaces; nil is
	// crossplane-runtime's global rate limiter (first come, first served).
	Share *fair.Share

	// ChangesFirst puts the drift checks of a namespace off while its
	// changes wait for the budget (with Share); nil does not.
	ChangesFirst *ChangesFirst

	// NamespaceWorkers is how many of a controller's workers one
	// namespace may hold at once (with Share; 0: all of them): the others
	// stay free for the other namespaces' requests.
	NamespaceWorkers int

	// Held counts the requests NamespaceWorkers holds back; nil does not.
	Held *HeldRequests
}

// Limit wraps a controller's reconciler in the reconcile budget: shared
// between namespaces if there is a Share, else global's.
func (b Budget) Limit(name string, r reconcile.Reconciler, global ratelimiter.RateLimiter, atRest func(context.Context, reconcile.Request) bool) reconcile.Reconciler {
	if b.Share != nil {
		f := NewFairReconciler(name, r, b.Share)
		f.Changes, f.AtRest = b.ChangesFirst, atRest
		return f
	}
	return ratelimiter.NewReconciler(name, r, global)
}

// Controller is c with the per-MR backoff capped at MaxBackoff and, with a
// Share, the fair queue. NOTE: crossplane-runtime's reconciler asks to be
// retried after successes too (a create, a delete to confirm), so an MR
// that failed a while backs off even on its way back; the load a cap lets
// through is still bounded by the global reconcile rate and by each
// server's own limit.
func (b Budget) Controller(c ctrlcontroller.Options) ctrlcontroller.Options {
	if b.MaxBackoff > 0 {
		c.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, b.MaxBackoff)
	}
	if b.Share != nil {
		c.NewQueue = FairQueue
	}
	return c
}

// Workers are controller name's options (c, as Controller makes them) and
// reconciler r: with Share and NamespaceWorkers below
// MaxConcurrentReconciles, no namespace holds more than NamespaceWorkers of
// its workers at once (LimitedWorkers).
func (b Budget) Workers(name string, c ctrlcontroller.Options, r reconcile.Reconciler) (ctrlcontroller.Options, reconcile.Reconciler) {
	c = b.Controller(c)
	if b.Share == nil || b.NamespaceWorkers <= 0 || b.NamespaceWorkers >= c.MaxConcurrentReconciles {
		return c, r
	}
	return LimitedWorkers(name, c, r, b.NamespaceWorkers, b.Held)
}
