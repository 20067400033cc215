package fair

import "sigs.k8s.io/controller-runtime/pkg/reconcile"

// A Queue hands out the requests waiting for a controller's workers in turns
// between namespaces: the next request is the oldest of the namespace that
// waited longest for its turn, so a namespace with thousands of requests
// queued holds another's back by one request each, not by thousands. It is
// client-go's workqueue.Queue (ordering only: the workqueue keeps the
// de-duplication and the locking).
type Queue struct {
	waiting map[string][]reconcile.Request
	turns   []string
	n       int
}

// NewQueue returns an empty Queue.
func NewQueue() *Queue { return &Queue{waiting: map[string][]reconcile.Request{}} }

// Touch does nothing: a request queued again keeps its place.
func (q *Queue) Touch(reconcile.Request) {}

// Push queues a request behind its namespace's others.
func (q *Queue) Push(r reconcile.Request) {
	if len(q.waiting[r.Namespace]) == 0 {
		q.turns = append(q.turns, r.Namespace)
	}
	q.waiting[r.Namespace] = append(q.waiting[r.Namespace], r)
	q.n++
}

// Len is how many requests are queued.
func (q *Queue) Len() int { return q.n }

// Pop hands out the oldest request of the namespace whose turn it is.
func (q *Queue) Pop() reconcile.Request {
	if q.n == 0 {
		return reconcile.Request{}
	}
	ns := q.turns[0]
	q.turns[0] = ""
	q.turns = q.turns[1:]
	w := q.waiting[ns]
	r := w[0]
	w[0] = reconcile.Request{}
	q.n--
	if len(w) == 1 {
		delete(q.waiting, ns)
		return r
	}
	q.waiting[ns] = w[1:]
	q.turns = append(q.turns, ns)
	return r
}
