package fair

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Seats lets at most a fixed number of requests run at once and, when all
// are taken, hands each seat freed to the waiting tenant that holds the
// fewest seats (of those, the one that waited longest for its turn; its
// oldest request first). So a tenant with hundreds of requests waiting
// holds another's next request back by one request, not by hundreds, and a
// tenant with a few requests has them seated at once beside a burst, up to
// an equal share of the seats.
//
// NOTE: for the provider's requests to the Kubernetes API server. Without
// it every reconcile's request goes at once, and on a busy API server each
// request's time grows with how many run at once (they share its CPU): while
// namespace A's 2,000 MRs were created, each of namespace B's few requests
// waited behind A's, several times in a row on B's way to Ready. With 8
// seats the many wait here, and each request that runs shares the API
// server with a few others only. Measured (make bench-scale's noisy
// neighbour, 2026-12-06): B's p95 to Ready beside A 2.9 s without, 2.0 to
// 2.4 s with 8 seats taken in turns; A all Ready in 50 s without, 50 to 59 s
// with; 5,000 MRs in one namespace all Ready in 131.5 s with (134.6 to 154.0
// without). In turns, B's requests had every other seat freed while A held
// the rest; the fewest-held tenant first seats them at once.
type Seats struct {
	mu      sync.Mutex
	n       int
	free    int
	held    map[string]int
	waiting map[string][]chan struct{}
	turns   []string
}

// NewSeats returns n seats (at least one).
func NewSeats(n int) *Seats {
	return &Seats{n: max(n, 1), free: max(n, 1), held: map[string]int{}, waiting: map[string][]chan struct{}{}}
}

// Counts are how many requests hold a seat and how many wait for one.
func (s *Seats) Counts() (taken, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiting {
		waiting += len(w)
	}
	return s.n - s.free, waiting
}

// Take waits for a seat for tenant, and returns the function that frees
// it; or ctx's error if ctx ends first.
func (s *Seats) Take(ctx context.Context, tenant string) (release func(), err error) {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.held[tenant]++
		s.mu.Unlock()
		return s.once(tenant), nil
	}
	ch := make(chan struct{})
	if len(s.waiting[tenant]) == 0 {
		s.turns = append(s.turns, tenant)
	}
	s.waiting[tenant] = append(s.waiting[tenant], ch)
	s.mu.Unlock()

	select {
	case <-ch:
		return s.once(tenant), nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.drop(tenant, ch) {
			// Handed a seat meanwhile: pass it on.
			s.leave(tenant)
		}
		return nil, ctx.Err()
	}
}

// once frees tenant's seat the first time it is called.
func (s *Seats) once(tenant string) func() {
	var o sync.Once
	return func() {
		o.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.leave(tenant)
		})
	}
}

// leave frees a seat tenant held and hands it to the next waiter, if any;
// s.mu is held.
func (s *Seats) leave(tenant string) {
	if s.held[tenant]--; s.held[tenant] <= 0 {
		delete(s.held, tenant)
	}
	if len(s.turns) == 0 {
		s.free++
		return
	}
	next := 0
	for i, t := range s.turns {
		if s.held[t] < s.held[s.turns[next]] {
			next = i
		}
	}
	t := s.turns[next]
	s.turns = slices.Delete(s.turns, next, next+1)
	w := s.waiting[t]
	close(w[0])
	s.held[t]++
	if len(w) == 1 {
		delete(s.waiting, t)
		return
	}
	s.waiting[t] = w[1:]
	s.turns = append(s.turns, t)
}

// drop takes ch out of tenant's waiters; false if it is not there (it was
// handed a seat). s.mu is held.
func (s *Seats) drop(tenant string, ch chan struct{}) bool {
	w := s.waiting[tenant]
	for i := range w {
		if w[i] != ch {
			continue
		}
		w = append(w[:i:i], w[i+1:]...)
		if len(w) > 0 {
			s.waiting[tenant] = w
			return true
		}
		delete(s.waiting, tenant)
		for j, t := range s.turns {
			if t == tenant {
				s.turns = slices.Delete(s.turns, j, j+1)
				break
			}
		}
		return true
	}
	return false
}

// Transport seats each request to the Kubernetes API server but the
// long-running ones (watches) and the leader election's (a lease renewal
// must never wait behind a burst), as the tenant its context carries (the
// reconciled MR's namespace, see WithTenant), else as the namespace in its
// path ("" for a cluster-scoped one).
//
// NOTE: by the context first: a reconcile also writes in the provider's own
// namespace (team keys), and as that namespace every tenant's team keys
// would wait in one line, a newcomer's behind a burst's hundreds.
func (s *Seats) Transport(rt http.RoundTripper) http.RoundTripper {
	return seated{seats: s, next: rt}
}

type seated struct {
	seats *Seats
	next  http.RoundTripper
}

func (t seated) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" || strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/") {
		return t.next.RoundTrip(r)
	}
	tenant := TenantOf(r.Context())
	if tenant == "" {
		tenant = namespaceOf(r.URL.Path)
	}
	release, err := t.seats.Take(r.Context(), tenant)
	if err != nil {
		return nil, err
	}
	// NOTE: freed once the answer's head is in: the API server has done
	// the request's work by then (the caller reads the body, one object
	// or a page of a list, after the seat is free).
	defer release()
	return t.next.RoundTrip(r)
}

// namespaceOf is the namespace of an API server path
// (/api/v1/namespaces/NS/... or /apis/G/V/namespaces/NS/...): "" if none.
func namespaceOf(path string) string {
	_, rest, ok := strings.Cut(path, "/namespaces/")
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}
