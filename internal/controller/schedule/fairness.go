package schedule

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// FairQueue is a controller's workqueue whose workers take the namespaces'
// requests in turns (see fair.Queue), with the per-MR backoff of limiter.
func FairQueue(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return queueOf(fair.NewQueue())(name, limiter)
}

// queueOf is a controller's workqueue ordered by q.
func queueOf(q *fair.Queue) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{
			Name: name,
			DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{
				Name:  name,
				Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: q}),
			}),
		})
	}
}

// LimitedWorkers keeps each namespace to limit of a controller's workers at
// once (fair.NewLimitedQueue), so that the others stay free for another
// namespace's requests: it returns the controller's options with that queue,
// and r, which tells the queue when each request is done. held, if not nil,
// counts the requests the limit holds back, as controller name's.
func LimitedWorkers(name string, o ctrlcontroller.Options, r reconcile.Reconciler, limit int, held *HeldRequests) (ctrlcontroller.Options, reconcile.Reconciler) {
	q := fair.NewLimitedQueue(limit)
	o.NewQueue = queueOf(q)
	held.add(name, q)
	return o, doneWith{Inner: r, Queue: q}
}

// HeldRequests is the gauge provider_terdut_requests_held_at_namespace_limit:
// per controller, the requests that wait only because their namespace holds
// as many of its workers as --max-concurrent-reconciles-per-namespace lets
// one (the other workers are free for other namespaces). High for long while
// the provider is idle otherwise: one namespace has more to do than its
// share of workers.
type HeldRequests struct {
	desc *prometheus.Desc

	mu     sync.Mutex
	queues map[string]*fair.Queue
}

// NewHeldRequests makes the gauge; register it.
func NewHeldRequests() *HeldRequests {
	return &HeldRequests{
		desc: prometheus.NewDesc("provider_terdut_requests_held_at_namespace_limit",
			"Requests waiting only because their namespace holds --max-concurrent-reconciles-per-namespace of the controller's workers already.",
			[]string{"controller"}, nil),
		queues: map[string]*fair.Queue{},
	}
}

func (h *HeldRequests) add(name string, q *fair.Queue) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queues[name] = q
}

// Describe implements prometheus.Collector.
func (h *HeldRequests) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *HeldRequests) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, q := range h.queues {
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.GaugeValue, float64(q.Held()), name)
	}
}

// doneWith tells Queue when each request's reconcile is done.
type doneWith struct {
	Inner reconcile.Reconciler
	Queue *fair.Queue
}

func (d doneWith) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer d.Queue.Done(req.Namespace)
	return d.Inner.Reconcile(ctx, req)
}

// A FairReconciler spends the provider's reconcile budget (one Share for
// every controller) fairly between namespaces: each request is booked the
// next slot of its namespace's share (a namespace alone has the whole
// budget; k namespaces asking at once have a k-th each, however many
// requests each has queued) and asked back at its slot, when it goes
// without booking another. The requests it lets through carry their
// namespace to the server's client (which shares each server's stated rate
// the same way).
//
// A request with a slot booked may come back before it (a watch event):
// it goes at once the first time, as with crossplane-runtime's global
// limiter, and waits for its slot after that; the timer of its slot brings
// it back once more (the workqueue keeps one timer per request, the
// earliest, so that return may also be the one it asked for), and it goes
// then too. So a slot is spent on two reconciles at most, and a request
// never holds two slots.
//
// NOTE: measured at 1,000 MRs created at once in one namespace (make
// bench-scale, 2026-12-04): all Ready in 35 to 48 s (three runs), against
// 67 s first come, first served the same day. Three earlier designs were
// slower: waiting in the worker for a slot booked at most a second ahead and
// asking the rest back after that second (63 to 68 s: each second all of
// them came back at once and took the free slots in no order, so teams'
// children waited on teams that had not had a turn); booking a second slot
// for a request its slot's timer brought back after a watch event had (326
// s); and asking every early comer back for the rest of its wait (131 s).
type FairReconciler struct {
	Name  string
	Inner reconcile.Reconciler
	Share *fair.Share
	// Changes, with AtRest (whether req is an MR at rest, polled), puts
	// drift checks off while the namespace's changes wait; nil does not.
	Changes *ChangesFirst
	AtRest  func(ctx context.Context, req reconcile.Request) bool

	mu     sync.Mutex
	booked map[reconcile.Request]*slot
	now    func() time.Time
}

// A slot is when a request may go, and whether it went early.
type slot struct {
	at   time.Time
	went bool
}

// NewFairReconciler wraps r in a FairReconciler.
func NewFairReconciler(name string, r reconcile.Reconciler, s *fair.Share) *FairReconciler {
	return &FairReconciler{Name: name, Inner: r, Share: s, booked: map[reconcile.Request]*slot{}, now: time.Now}
}

// Reconcile runs the inner reconciler once the namespace's share allows.
func (r *FairReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.Share != nil {
		poll := r.Changes != nil && r.AtRest != nil && r.AtRest(ctx, req)
		if poll {
			if later := r.Changes.Defer(req); later > 0 {
				return reconcile.Result{RequeueAfter: later}, nil
			}
		}
		if wait := r.wait(req); wait > 0 {
			if !poll && r.Changes != nil {
				r.Changes.Waiting(req.Namespace, wait)
			}
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	return r.Inner.Reconcile(fair.WithTenant(ctx, req.Namespace), req)
}

// wait is how long req must wait for its slot: zero if it may go now.
func (r *FairReconciler) wait(req reconcile.Request) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if s, ok := r.booked[req]; ok {
		switch {
		case !now.Before(s.at):
			delete(r.booked, req)
			return 0
		case !s.went:
			s.went = true
			return 0
		default:
			return s.at.Sub(now)
		}
	}
	wait := r.Share.Book(req.Namespace)
	if wait <= 0 {
		return 0
	}
	r.booked[req] = &slot{at: now.Add(wait)}
	return wait
}
