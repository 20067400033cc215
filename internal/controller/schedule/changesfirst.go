package schedule

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// ChangesFirst gives a namespace's changes (an MR to create, update or
// delete, or not yet Ready) its share of the reconcile budget before its
// drift checks (an MR at rest, polled): while a change of the namespace
// waits for its slot, an MR at rest of the namespace is asked back when that
// wait is over instead of booking a slot, for at most MaxDefer (its poll),
// after which it books one like any other. At rest nothing waits, and every
// poll books as before.
//
// NOTE: at 5,000 MRs and a 30 s poll, the MRs already Ready asked for about
// 170 checks a second, more than the whole budget (100): applied at once,
// the last MRs waited behind the first ones' polls (all Ready in 210 s).
type ChangesFirst struct {
	// MaxDefer is how long a drift check may be put off: the poll.
	MaxDefer time.Duration

	mu       sync.Mutex
	busy     map[string]time.Time
	deferred map[reconcile.Request]time.Time
	now      func() time.Time
}

// NewChangesFirst puts drift checks off for at most maxDefer.
func NewChangesFirst(maxDefer time.Duration) *ChangesFirst {
	return &ChangesFirst{MaxDefer: maxDefer, busy: map[string]time.Time{}, deferred: map[reconcile.Request]time.Time{}, now: time.Now}
}

// Waiting records that a change of ns waits wait for its slot.
func (c *ChangesFirst) Waiting(ns string, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := c.now().Add(wait); until.After(c.busy[ns]) {
		c.busy[ns] = until
	}
}

// Defer is how long the drift check req is put off: zero if it books a slot
// now.
func (c *ChangesFirst) Defer(req reconcile.Request) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	until, ok := c.busy[req.Namespace]
	if !ok || !now.Before(until) {
		delete(c.busy, req.Namespace)
		delete(c.deferred, req)
		return 0
	}
	first, ok := c.deferred[req]
	if !ok {
		first = now
		c.deferred[req] = now
	}
	if now.Sub(first) >= c.MaxDefer {
		delete(c.deferred, req)
		return 0
	}
	return min(until.Sub(now), first.Add(c.MaxDefer).Sub(now))
}

// AtRest says whether mg is a drift check's: it exists on the server, is
// Ready and Synced at its current generation, and is not being deleted.
func AtRest(mg resource.Managed) bool {
	if meta.WasDeleted(mg) || meta.GetExternalName(mg) == "" {
		return false
	}
	if mg.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue || mg.GetCondition(xpv2.TypeSynced).Status != corev1.ConditionTrue {
		return false
	}
	g, ok := mg.(interface{ GetObservedGeneration() int64 })
	return ok && g.GetObservedGeneration() == mg.GetGeneration()
}
