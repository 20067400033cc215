package credentials

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// inFlight sends two requests with key old to the server before either is
// answered, then answers the second only once a request with another key
// (the first one's retry) has been answered: two of a child's requests in
// flight when a rotation revoked old.
type inFlight struct {
	old           string
	mu            sync.Mutex
	n             int
	sent, retried chan struct{}
	once          sync.Once
}

func (h *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "Bearer "+h.old {
		rsp, err := http.DefaultTransport.RoundTrip(r)
		h.once.Do(func() { close(h.retried) })
		return rsp, err
	}
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	rsp, err := http.DefaultTransport.RoundTrip(r)
	if n == 1 {
		<-h.sent
	} else {
		close(h.sent)
		<-h.retried
	}
	return rsp, err
}

// TestTwoInFlightRequestsAfterARotationMintNothing: a child's client holds
// key K0 with two requests in flight when the Team rotates (K1 written, K0
// revoked). Both are refused. The first's Refresh takes K1 from the Secret
// and sets inUse=K1; the second's Refresh then reads refused=K1 (not the K0
// it was sent with), finds K1 in the Secret, takes it for refused and mints
// K2 (revoking K1, which every other client of the team just took).
func TestTwoInFlightRequestsAfterARotationMintNothing(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance", MaxRetries: -1})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	k := &TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system"}
	o, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL, MaxRetries: -1}, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	o.Transport = &inFlight{old: o.Token.Reveal(), sent: make(chan struct{}), retried: make(chan struct{})}
	child, _ := terdut.New(o)
	if err := k.Rotate(t.Context(), cfg, instance, team.ID, "now", mayMint); err != nil {
		t.Fatal(err)
	}
	mints := double.Count("POST /api/service-accounts/{id}/keys")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = child.ListDeadmanSwitches(t.Context(), team.ID) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys") - mints; n != 0 {
		t.Errorf("%d keys minted for two requests refused with the rotated-out key; want 0 (the Secret holds the new one)", n)
	}
}
