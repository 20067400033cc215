package main

import (
	"testing"
	"time"
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
	if _, err = parse([]string{"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=10s"}); err == nil {
		t.Error("a renew deadline as long as the lease was accepted")
	}
}
