//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

// lease is the replicas' leader-election lease.
const lease = 15 * time.Second

// leaderMetric is controller-runtime's gauge of whether a replica leads.
const leaderMetric = `leader_election_master_status{name="crossplane-leader-election-provider-terdut"} 1`

// replica is one of two provider processes with leader election.
type replica struct {
	name string
	n    int
	p    *stack.Process
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	p, err := env.stack.StartReplica(context.Background(), r.name, r.n, "--leader-election",
		"--leader-election-lease-duration="+lease.String(), "--leader-election-renew-deadline=10s")
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
}

// leads reports whether the replica says it leads.
func (r *replica) leads() bool {
	if r.p == nil || r.p.Exited() {
		return false
	}
	rsp, err := http.Get("http://" + env.stack.ReplicaMetricsAddr(r.n) + "/metrics") //nolint:noctx // Loopback, short.
	if err != nil {
		return false
	}
	defer rsp.Body.Close()
	b, _ := io.ReadAll(rsp.Body)
	return strings.Contains(string(b), leaderMetric)
}

// leader waits until one of rs leads and returns it, and how long it took.
func leader(t *testing.T, d time.Duration, rs ...*replica) (*replica, time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < d {
		for _, r := range rs {
			if r.leads() {
				return r, time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no replica leads after %s", d)
	return nil, 0
}

// TestFailover: two provider replicas with leader election. The leader is
// killed (SIGKILL) while a 200-MR fleet is being created: the standby takes
// over once the lease runs out, and finishes the fleet with no duplicate
// and nothing stuck. Then a clean stop (SIGTERM) of the new leader hands the
// lease over at once.
func TestFailover(t *testing.T) {
	scenariof(t, "two replicas with leader election (lease 15s); the leader SIGKILLed during a 200-MR apply -> the standby takes over; 0 duplicates, 0 stuck, all Ready")
	env.stack.StopProvider()
	a, b := &replica{name: "provider-a", n: 1}, &replica{name: "provider-b", n: 2}
	defer func() {
		for _, r := range []*replica{a, b} {
			if r.p != nil {
				r.p.Stop()
			}
		}
		if err := startProvider(); err != nil {
			t.Error(err)
		}
	}()
	a.start(t)
	first, _ := leader(t, 60*time.Second, a)
	b.start(t)
	time.Sleep(3 * time.Second) // b is up, and stands by
	if b.leads() {
		t.Fatal("two replicas lead at once")
	}

	f := fleet{ns: "failover", teams: 40, pc: "default"}
	namespace(t, f.ns, nil)
	posts := counters(t)["POST /api/teams"]
	applied := time.Now()
	apply(t, f.yaml())
	if !waitFor(60*time.Second, func() bool { return counters(t)["POST /api/teams"] >= posts+10 }) {
		t.Fatal("the leader made fewer than 10 teams within 60 s")
	}
	first.p.Kill()
	killed := time.Now()
	at := killed.Sub(applied)
	made := counters(t)["POST /api/teams"] - posts
	next, takeover := leader(t, 90*time.Second, b)
	_, stuck := waitFleet(t, f, 240*time.Second)
	readyAfter := time.Since(killed)
	stuck = append(stuck, createPending(t, f.ns)...)
	st := state(t)
	c := count(t, &st, f)
	fmt.Printf("    killed %s %.1fs into the apply (%d of 40 teams made); %s took over after %.1fs (lease 15s); %d MRs Ready %.1fs after the kill; server objects per MR: %s; stuck %d; missing %d; webhook keys refused %d\n",
		first.name, at.Seconds(), made, next.name, takeover.Seconds(), f.size(), readyAfter.Seconds(), perMR(c.duplicates), len(stuck), len(c.missing), len(c.refused))
	for _, l := range [][]string{stuck, c.missing, c.refused} {
		for _, s := range l {
			fmt.Printf("      %s\n", s)
		}
	}
	if c.duplicates+len(stuck)+len(c.missing)+len(c.refused) != 0 {
		t.Errorf("after the failover: %d duplicates, %d stuck, %d missing, %d keys refused", c.duplicates, len(stuck), len(c.missing), len(c.refused))
	}
	// The killed leader renewed its 15 s lease at most a retry period (2 s)
	// before it died: the standby may lead no sooner (two leaders), and
	// should not take much longer (the lease not honoured, or a default one).
	if takeover < lease-3*time.Second || takeover > lease+10*time.Second {
		t.Errorf("the standby took over %.1fs after the kill; with a %s lease, want %s to %s", takeover.Seconds(), lease, lease-3*time.Second, lease+10*time.Second)
	}

	scenariof(t, "a clean stop (SIGTERM) of the leader -> the lease is handed over at once")
	first.start(t)
	time.Sleep(3 * time.Second)
	stopAt := time.Now()
	next.p.Stop()
	again, _ := leader(t, 60*time.Second, first)
	handover := time.Since(stopAt)
	fmt.Printf("    SIGTERM to %s; %s led %.1fs after the SIGTERM (after the kill: %.1fs)\n", next.name, again.name, handover.Seconds(), takeover.Seconds())
	if handover > 10*time.Second {
		t.Errorf("the clean handover took %s: the lease was not released", handover)
	}
	if _, err := kubectlOut(nil, "-n", f.ns, "delete", "team,escalationpolicy,deadmanswitch,integration", "--all", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	if left := waitGone(t, f.ns, 180*time.Second); len(left) > 0 {
		t.Errorf("left after deleting the fleet: %v", left)
	}
}
