package fair

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// queued is how many wait for a seat; free how many seats are free.
func queued(s *Seats) int { _, w := s.Counts(); return w }

func free(s *Seats) int { taken, _ := s.Counts(); return s.n - taken }

// waitQueued waits until n wait for a seat.
func waitQueued(t *testing.T, s *Seats, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for queued(s) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d wait for a seat, want %d", queued(s), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// seat is a request seated, by tenant.
type seat struct {
	tenant  string
	release func()
}

// taker's take waits for a seat of s for a tenant in the background, and
// sends it on seated once it has one.
func taker(t *testing.T, s *Seats) (take func(tenant string), seated chan seat) {
	t.Helper()
	seated = make(chan seat, 1000)
	return func(tenant string) {
		go func() {
			r, err := s.Take(context.Background(), tenant)
			if err != nil {
				t.Error(err)
				return
			}
			seated <- seat{tenant, r}
		}()
	}, seated
}

// TestABurstHoldsAnotherNamespaceBackByOneRequest: namespace a holds the
// seat and has 200 more requests waiting when b's 3 come; b's are among the
// next 6 seated (turns), not after a's 200.
func TestABurstHoldsAnotherNamespaceBackByOneRequest(t *testing.T) {
	s := NewSeats(1)
	ctx := context.Background()
	held, err := s.Take(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	take, seated := taker(t, s)
	for i := range 200 {
		take("a")
		waitQueued(t, s, i+1)
	}
	for i := range 3 {
		take("b")
		waitQueued(t, s, 201+i)
	}
	// One seat: each is seated only once the one before is released, so
	// the order received is the order seated.
	held()
	order := make([]string, 0, 203)
	lastB := -1
	for i := range 203 {
		st := <-seated
		order = append(order, st.tenant)
		if st.tenant == "b" {
			lastB = i
		}
		st.release()
	}
	if lastB < 0 || lastB >= 6 {
		t.Errorf("b's last request was seated %d-th of %d, want within the first 6 (%v)", lastB+1, len(order), order[:10])
	}
	if f := free(s); f != 1 {
		t.Errorf("%d seats free after all were released, want 1", f)
	}
}

// TestAFewRequestsAreSeatedBeforeABurstsNext: a holds all 4 seats and has
// 100 requests waiting when b's 2 come; the next 2 seats a frees go to b
// (it holds none), not every other one.
func TestAFewRequestsAreSeatedBeforeABurstsNext(t *testing.T) {
	s := NewSeats(4)
	ctx := context.Background()
	held := make([]func(), 0, 4)
	for range 4 {
		r, _ := s.Take(ctx, "a")
		held = append(held, r)
	}
	take, seated := taker(t, s)
	for i := range 100 {
		take("a")
		waitQueued(t, s, i+1)
	}
	take("b")
	take("b")
	waitQueued(t, s, 102)
	order := make([]string, 0, 2)
	for _, r := range held[:2] {
		r()
		st := <-seated
		order = append(order, st.tenant)
		defer st.release()
	}
	if order[0] != "b" || order[1] != "b" {
		t.Errorf("the 2 seats a freed went to %v, want b, b", order)
	}
	for _, r := range held[2:] {
		r()
	}
	for range 100 {
		(<-seated).release()
	}
}

// TestAWaiterThatGivesUpLosesNoSeat: a request whose context ends while it
// waits returns its error and leaves the seats as they were, even when it
// was handed one at the same moment.
func TestAWaiterThatGivesUpLosesNoSeat(t *testing.T) {
	s := NewSeats(1)
	release, err := s.Take(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Take(ctx, "b")
		done <- err
	}()
	waitQueued(t, s, 1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a waiter whose context ended got a seat")
	}
	release()
	release() // a second call frees nothing more
	if free(s) != 1 || queued(s) != 0 || len(s.turns) != 0 {
		t.Errorf("free %d, waiting %d, turns %v; want 1, 0, none", free(s), queued(s), s.turns)
	}

	// Handed a seat and cancelled at once: the seat goes back.
	for range 100 {
		release, _ := s.Take(context.Background(), "a")
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Duration(time.Now().UnixNano()%3) * time.Microsecond); cancel() }()
		go release()
		if r, err := s.Take(ctx, "b"); err == nil {
			r()
		}
		cancel()
		deadline := time.Now().Add(time.Second)
		for free(s) != 1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if f := free(s); f != 1 {
			t.Fatalf("free %d after a race of a release and a cancel, want 1", f)
		}
	}
}

// TestTheTransportSeatsAllButWatchesAndLeases: with the one seat held, a
// watch and a lease renewal go through; a namespace's GET waits.
func TestTheTransportSeatsAllButWatchesAndLeases(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	defer srv.Close()
	s := NewSeats(1)
	c := &http.Client{Transport: s.Transport(http.DefaultTransport)}
	release, _ := s.Take(context.Background(), "x")
	for _, p := range []string{
		"/apis/terdut.crossplane.io/v1alpha1/teams?watch=true",
		"/apis/coordination.k8s.io/v1/namespaces/crossplane-system/leases/l",
	} {
		resp, err := get(t, c, srv.URL+p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		_ = resp.Body.Close()
	}
	got := make(chan struct{})
	go func() {
		defer close(got)
		resp, err := get(t, c, srv.URL+"/api/v1/namespaces/team-b/secrets/s")
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	waitQueued(t, s, 1)
	if taken, waiting := s.Counts(); taken != 1 || waiting != 1 {
		t.Errorf("Counts() = %d taken, %d waiting; want 1, 1", taken, waiting)
	}
	if s.turns[0] != "team-b" {
		t.Errorf("the GET waits as %q, want team-b", s.turns[0])
	}
	release()
	<-got
	if served.Load() != 3 {
		t.Errorf("%d requests served, want 3", served.Load())
	}
}

// TestTeamKeysWaitAsTheirTenant: every tenant's team keys are written in
// the provider's own namespace. a's 50 key writes wait there when b's one
// comes: b's is served within the next 2, as b's, not after a's 50.
func TestTeamKeysWaitAsTheirTenant(t *testing.T) {
	var mu sync.Mutex
	var order []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, r.URL.Query().Get("from"))
	}))
	defer srv.Close()
	s := NewSeats(1)
	c := &http.Client{Transport: s.Transport(http.DefaultTransport)}
	held, _ := s.Take(t.Context(), "x")
	var wg sync.WaitGroup
	send := func(tenant string) {
		wg.Go(func() {
			ctx := WithTenant(t.Context(), tenant)
			resp, err := getCtx(ctx, c, srv.URL+"/api/v1/namespaces/crossplane-system/secrets/team-key?from="+tenant)
			if err != nil {
				t.Error(err)
				return
			}
			_ = resp.Body.Close()
		})
	}
	for i := range 50 {
		send("a")
		waitQueued(t, s, i+1)
	}
	send("b")
	waitQueued(t, s, 51)
	held()
	wg.Wait()
	if i := slices.Index(order, "b"); i < 0 || i >= 2 {
		t.Errorf("b's key write was served %d-th of %d, want within the first 2", i+1, len(order))
	}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	return getCtx(t.Context(), c, url)
}

func getCtx(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

func TestTheNamespaceOfAPath(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/a/secrets/s":                                            "a",
		"/apis/terdut.crossplane.io/v1alpha1/namespaces/b/teams":                    "b",
		"/api/v1/namespaces/c":                                                      "c",
		"/apis/terdut.crossplane.io/v1alpha1/clusterproviderconfigs/default/status": "",
	} {
		if got := namespaceOf(path); got != want {
			t.Errorf("namespaceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
