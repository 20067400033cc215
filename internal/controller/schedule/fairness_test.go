package schedule

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// TestABookedRequestHoldsOneSlot: a request asked back for its slot that a
// watch event brings back early goes once, then waits for its slot, and its
// slot's timer lets it go again without booking a second slot (which made
// 1,000 MRs take 326 s instead of 37).
func TestABookedRequestHoldsOneSlot(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	ran := 0
	r := NewFairReconciler("test", reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		ran++
		return reconcile.Result{}, nil
	}), fair.New(10, fair.Options{Now: clock}))
	r.now = clock
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: name}}
	}
	step := func(what string, q reconcile.Request, wantWait time.Duration) {
		t.Helper()
		before := ran
		res, err := r.Reconcile(t.Context(), q)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.RequeueAfter != wantWait {
			t.Errorf("%s: asked back after %s, want %s", what, res.RequeueAfter, wantWait)
		}
		if went := ran > before; went != (wantWait == 0) {
			t.Errorf("%s: reconciled %t, want %t", what, went, wantWait == 0)
		}
	}
	step("first request", req("1"), 0)
	step("second request", req("2"), 100*time.Millisecond)
	now = now.Add(10 * time.Millisecond)
	step("second request back early (a watch event)", req("2"), 0)
	now = now.Add(10 * time.Millisecond)
	step("second request back early again", req("2"), 80*time.Millisecond)
	now = now.Add(80 * time.Millisecond)
	step("second request at its slot", req("2"), 0)
	step("third request", req("3"), 100*time.Millisecond)
	if len(r.booked) != 1 {
		t.Errorf("%d requests hold a slot, want 1 (the third)", len(r.booked))
	}
}
