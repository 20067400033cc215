package schedule

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// order records the order in which requests reached the reconciler.
type order struct {
	mu   sync.Mutex
	seen []reconcile.Request
	b    int
	done chan struct{}
	// untold counts the requests that did not carry their namespace to
	// the server's client.
	untold int
}

func (o *order) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	time.Sleep(time.Millisecond) // a request to the server
	o.mu.Lock()
	defer o.mu.Unlock()
	if fair.TenantOf(ctx) != req.Namespace {
		o.untold++
	}
	o.seen = append(o.seen, req)
	if req.Namespace == "b" {
		if o.b++; o.b == 20 {
			close(o.done)
		}
	}
	return reconcile.Result{}, nil
}

// work runs a controller's workers as controller-runtime does: take a
// request, reconcile it, requeue it if asked.
func work(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], r reconcile.Reconciler, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				req, shutdown := q.Get()
				if shutdown {
					return
				}
				res, err := r.Reconcile(ctx, req)
				switch {
				case err != nil:
					q.AddRateLimited(req)
				case res.RequeueAfter > 0:
					q.Forget(req)
					q.AddAfter(req, res.RequeueAfter)
				default:
					q.Forget(req)
				}
				q.Done(req)
			}
		})
	}
	wg.Wait()
}

// TestABurstInOneNamespaceDoesNotStarveAnother: namespace a has 2,000 MRs
// queued (a restart, a big apply) when namespace b's 20 are created. The
// provider's controllers (its queue, its reconcile budget) reach b's 20
// within the first few dozen reconciles, not after a's 2,000.
func TestABurstInOneNamespaceDoesNotStarveAnother(t *testing.T) {
	const rate, workers = 1000, 4
	o := Budget{MaxBackoff: 10 * time.Second, Share: fair.New(rate, fair.Options{Burst: 10 * rate})}
	newQueue := o.Controller(controller.Options{}.ForControllerRuntime()).NewQueue
	if newQueue == nil {
		// controller-runtime's default.
		newQueue = func(name string, l workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return priorityqueue.New[reconcile.Request](name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = l })
		}
	}
	q := newQueue("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	rec := &order{done: make(chan struct{})}
	r := o.Limit("test", rec, ratelimiter.NewGlobal(rate), nil)
	for i := range 2000 {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: fmt.Sprint(i)}})
	}
	for i := range 20 {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "b", Name: fmt.Sprint(i)}})
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-rec.done:
		case <-ctx.Done():
		}
		q.ShutDown()
	}()
	work(ctx, q, r, workers)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	last := 0
	for i, req := range rec.seen {
		if req.Namespace == "b" {
			last = i + 1
		}
	}
	if rec.untold > 0 {
		t.Errorf("%d reconciles did not carry their namespace to the server's client (which shares its rate by namespace)", rec.untold)
	}
	t.Logf("b's 20th reconcile was the %d-th of %d", last, len(rec.seen))
	if rec.b < 20 || last > 2*20+2*workers {
		t.Errorf("b's 20 MRs were reconciled by the %d-th reconcile (%d of b's done), want within the first %d: a's 2,000 queued first starve b", last, rec.b, 2*20+2*workers)
	}
}

// TestANamespacesBurstLeavesWorkersFree: namespace a's 2,000 MRs take long
// reconciles (a busy API server) and would hold every worker; with 4 workers
// and at most 3 for one namespace, b's MR, created after them, is reconciled
// while all of a's running reconciles are still running.
func TestANamespacesBurstLeavesWorkersFree(t *testing.T) {
	held := NewHeldRequests()
	o := Budget{Share: fair.New(1000, fair.Options{Burst: 10000}), NamespaceWorkers: 3, Held: held}
	release := make(chan struct{})
	var mu sync.Mutex
	running := map[string]int{}
	bDone := make(chan int, 1)
	r := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		mu.Lock()
		running[req.Namespace]++
		if req.Namespace == "b" {
			bDone <- running["a"]
		}
		mu.Unlock()
		if req.Namespace == "a" {
			<-release
		}
		mu.Lock()
		running[req.Namespace]--
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	copts, rec := o.Workers("test", controller.Options{MaxConcurrentReconciles: 4}.ForControllerRuntime(), r)
	q := copts.NewQueue("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	for i := range 2000 {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: fmt.Sprint(i)}})
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	go work(ctx, q, rec, copts.MaxConcurrentReconciles)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := running["a"]
		mu.Unlock()
		if n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// An SRE sees why a's requests wait while a worker is free.
	if got := testutil.ToFloat64(held); got != 2000-3 {
		t.Errorf("provider_terdut_requests_held_at_namespace_limit = %v with 3 of a's 2,000 running, want 1997", got)
	}
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "b", Name: "0"}})
	select {
	case aRunning := <-bDone:
		if aRunning != 3 {
			t.Errorf("b's MR ran beside %d of a's, want 3 (a's limit)", aRunning)
		}
	case <-time.After(10 * time.Second):
		t.Error("b's MR waited for a's reconciles to end: every worker was a's")
	}
	close(release)
	cancel()
}
