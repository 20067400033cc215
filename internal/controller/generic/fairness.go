package generic

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// FairQueue is a controller's workqueue whose workers take the namespaces'
// requests in turns (see fair.Queue), with the per-MR backoff of limiter.
func FairQueue(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{
		Name: name,
		DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{
			Name:  name,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: fair.NewQueue()}),
		}),
	})
}

// A FairReconciler spends the provider's reconcile budget (one Share for
// every controller) fairly between namespaces: a request its namespace's
// share cannot take now is asked back later, and the requests it lets
// through carry their namespace to the server's client (which shares each
// server's stated rate the same way).
type FairReconciler struct {
	Name  string
	Inner reconcile.Reconciler
	Share *fair.Share

	mu     sync.Mutex
	booked map[string]struct{}
}

// NewFairReconciler wraps r in a FairReconciler.
func NewFairReconciler(name string, r reconcile.Reconciler, s *fair.Share) *FairReconciler {
	return &FairReconciler{Name: name, Inner: r, Share: s, booked: map[string]struct{}{}}
}

// Reconcile runs the inner reconciler if the namespace's share allows.
func (r *FairReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.Share != nil {
		if wait := r.when(req); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	return r.Inner.Reconcile(fair.WithTenant(ctx, req.Namespace), req)
}

// when is how long req must wait: nothing if it comes back for the slot
// booked for it.
func (r *FairReconciler) when(req reconcile.Request) time.Duration {
	item := r.Name + "/" + req.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.booked[item]; ok {
		delete(r.booked, item)
		return 0
	}
	wait, booked := r.Share.Reserve(req.Namespace)
	if wait > 0 && booked {
		r.booked[item] = struct{}{}
	}
	return wait
}
