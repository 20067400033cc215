package main

import (
	"strings"
	"testing"
)

// TestAPeerThatDidNotDoTheWorkIsNotCompared: a peer run whose objects mostly
// never turned Ready did less work; the table says so instead of printing a
// ratio that reads as a win for it, and a run that did the work gets one.
func TestAPeerThatDidNotDoTheWorkIsNotCompared(t *testing.T) {
	sh := shape{Name: "mixed N=1000"}
	ours := result{Shape: sh, MRs: 1000, ReadySeconds: 38, Behaviours: []behaviour{{What: "x", Good: true}}}
	defaults := result{Shape: sh, MRs: 1000, ReadySeconds: 281, NotReady: 8, Provider: "peer, defaults"}
	tuned := result{Shape: sh, MRs: 1000, ReadySeconds: 11, NotReady: 980, Provider: "peer, tuned"}
	r := report{Results: []result{ours}}
	r.addPeers([]result{defaults, tuned})
	if len(r.Peers) != 3 {
		t.Fatalf("%d rows, want 3", len(r.Peers))
	}
	if got := r.Peers[1].Ratios; len(got) != 7 || got[0] < 7 {
		t.Errorf("the defaults run (992 of 1,000 Ready) has ratios %v, want time to Ready x7.4 first", got)
	}
	if got := r.Peers[2].Ratios; got != nil {
		t.Errorf("the tuned run (20 of 1,000 Ready) has ratios %v, want none", got)
	}
	var b strings.Builder
	printPeers(&b, r.Peers)
	if !strings.Contains(b.String(), "not compared, 980 of 1000 never Ready") {
		t.Errorf("the table does not say the tuned run is not compared:\n%s", b.String())
	}
}
