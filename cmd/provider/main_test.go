package main

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

func TestParse(t *testing.T) {
	f, err := parse(nil)
	if err != nil || f.minPoll != 10*time.Second || f.unfair {
		t.Errorf("defaults: min poll %v, first-come-first-served %t, %v; want 10s, false, no error", f.minPoll, f.unfair, err)
	}
	// A --poll shorter than the floor is the operator's choice: the
	// provider starts (the e2e suite polls every 4s).
	if f, err = parse([]string{"--poll=4s"}); err != nil || f.minPoll != 4*time.Second {
		t.Errorf("--poll=4s: min poll %v, %v; want 4s and no error", f.minPoll, err)
	}
	// A burst in one namespace leaves a third of each kind's workers to
	// the others.
	if f.maxConcurrent != 15 || f.namespaceWorkers != 10 {
		t.Errorf("defaults: %d workers a kind, %d for one namespace; want 15, 10", f.maxConcurrent, f.namespaceWorkers)
	}
	if _, err = parse([]string{"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=10s"}); err == nil {
		t.Error("a renew deadline as long as the lease was accepted")
	}
}

// TestSeatsMetrics: an SRE sees how many of the provider's requests to the
// API server run and how many wait for a seat.
func TestSeatsMetrics(t *testing.T) {
	if f, _ := parse(nil); f.apiSeats != 8 {
		t.Errorf("--max-api-requests-in-flight defaults to %d, want 8", f.apiSeats)
	}
	s := fair.NewSeats(1)
	release, err := s.Take(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		if r, err := s.Take(t.Context(), "b"); err == nil {
			r()
		}
	}()
	m := seatsMetrics(s)
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m[1]) != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if in, w := testutil.ToFloat64(m[0]), testutil.ToFloat64(m[1]); in != 1 || w != 1 {
		t.Errorf("in flight %v, waiting %v; want 1, 1", in, w)
	}
	release()
	<-waiting
	if in, w := testutil.ToFloat64(m[0]), testutil.ToFloat64(m[1]); in != 0 || w != 0 {
		t.Errorf("after both: in flight %v, waiting %v; want 0, 0", in, w)
	}
}
