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

// A target missed fails the run: the GETs per MR per poll at rest are
// compared with the API's floor for the shape (a team's policy, switches and
// integrations: 3 GETs for 4 MRs, 0.75), and a run over it by more than 5%
// exits non-zero, naming the target; a run at the floor does not.
func TestAMissedTargetFailsTheRun(t *testing.T) {
	sh := shape{Name: "mixed N=400", Teams: 100, Policy: true, Switches: 1, Integrations: 1}
	if f := sh.Floor(); f != 0.75 {
		t.Fatalf("the floor of %d teams of a Team, a policy, a switch and an integration is %.3f, want 0.75", sh.Teams, f)
	}
	run := func(gets float64) error {
		r := newReport([]result{{Shape: sh, MRs: sh.MRs(), ChecksPerMRPerPoll: 1, GETsPerMRPerPoll: gets}}, 0, 0, nil)
		return r.missed()
	}
	if err := run(0.75); err != nil {
		t.Errorf("a run at the floor: %v", err)
	}
	err := run(0.80)
	if err == nil || !strings.Contains(err.Error(), "GETs per MR per poll at rest") {
		t.Errorf("a run 7%% over the floor: %v; want the GETs target named as missed", err)
	}
}
