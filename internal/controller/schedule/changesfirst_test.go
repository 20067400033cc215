package schedule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// TestChangesGoBeforeDriftChecks: while a namespace's new MRs wait for the
// reconcile budget, its MRs at rest are asked back later instead of taking
// slots from them; a drift check is put off for at most one poll, and at
// rest every poll books as before.
func TestChangesGoBeforeDriftChecks(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	share := fair.New(100, fair.Options{Burst: 1, Now: clock})
	changes := NewChangesFirst(30 * time.Second)
	changes.now = clock
	ran := map[string]int{}
	r := NewFairReconciler("test", reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		ran[req.Name]++
		return reconcile.Result{}, nil
	}), share)
	r.now = clock
	r.Changes = changes
	r.AtRest = func(_ context.Context, req reconcile.Request) bool { return strings.HasPrefix(req.Name, "rest-") }
	ask := func(name string) time.Duration {
		t.Helper()
		res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return res.RequeueAfter
	}

	if ask("rest-0") != 0 || ran["rest-0"] != 1 {
		t.Fatal("at rest, a drift check did not go at once")
	}
	now = now.Add(time.Second)
	if ask("new-0") != 0 {
		t.Fatal("the first change did not go at once")
	}
	if wait := ask("new-1"); wait != 10*time.Millisecond {
		t.Fatalf("the second change waits %v, want 10ms (100 a second)", wait)
	}
	later := ask("rest-1")
	if ran["rest-1"] != 0 || later <= 0 || later > 10*time.Millisecond {
		t.Fatalf("a drift check while a change waits: ran %d times, asked back after %v; want not run, asked back within 10ms", ran["rest-1"], later)
	}
	if wait := ask("new-2"); wait != 20*time.Millisecond {
		t.Errorf("the third change waits %v, want 20ms: the drift check must not have taken a slot", wait)
	}

	// Changes keep waiting (150 a second against 100): the drift check
	// books its slot once it was put off for a poll.
	first := now
	booked := func() bool {
		_, ok := r.booked[reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "rest-1"}}]
		return ok
	}
	for i := 0; !booked() && i < 40; i++ {
		now = now.Add(time.Second)
		for j := range 150 {
			ask(fmt.Sprintf("new-%d-%d", i, j))
		}
		ask("rest-1")
	}
	if took := now.Sub(first); !booked() || took < 30*time.Second || took > 31*time.Second {
		t.Errorf("under changes, the drift check booked a slot: %t, after %v; want true, after a poll (30s)", booked(), took)
	}
}
