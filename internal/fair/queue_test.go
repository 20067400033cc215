package fair

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns string, i int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: fmt.Sprint(i)}}
}

// TestAQueuedNamespaceWaitsForTurnsNotForAll: 2,000 requests of namespace a
// are queued before 20 of b; the workers get b's within the first 40.
func TestAQueuedNamespaceWaitsForTurnsNotForAll(t *testing.T) {
	q := NewQueue()
	for i := range 2000 {
		q.Push(req("a", i))
	}
	for i := range 20 {
		q.Push(req("b", i))
	}
	lastB := 0
	seen := map[string]int{}
	for i := 1; q.Len() > 0; i++ {
		r := q.Pop()
		if r.Name != fmt.Sprint(seen[r.Namespace]) {
			t.Fatalf("pop %d: %s, want %s/%d (each namespace in order)", i, r, r.Namespace, seen[r.Namespace])
		}
		seen[r.Namespace]++
		if r.Namespace == "b" {
			lastB = i
		}
	}
	if lastB > 40 || seen["a"] != 2000 || seen["b"] != 20 {
		t.Errorf("b's last request was handed out %d-th (a %d, b %d handed out), want within the first 40", lastB, seen["a"], seen["b"])
	}
}

// TestANamespaceAtTheLimitLeavesWorkersFree: with a limit of 3, namespace a
// (2,000 queued) is handed out 3 requests and no more until one is Done,
// so b's requests, queued after, go at once to the free workers.
func TestANamespaceAtTheLimitLeavesWorkersFree(t *testing.T) {
	q := NewLimitedQueue(3)
	for i := range 2000 {
		q.Push(req("a", i))
	}
	for range 3 {
		if r := q.Pop(); r.Namespace != "a" {
			t.Fatalf("handed out %s, want a's", r)
		}
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("with a's 3 out, %d may be handed out, want 0 (a is at the limit)", n)
	}
	for i := range 2 {
		q.Push(req("b", i))
	}
	for i := range 2 {
		if n := q.Len(); n != 2-i {
			t.Fatalf("Len %d, want %d (b's only)", n, 2-i)
		}
		if r := q.Pop(); r.Namespace != "b" || r.Name != fmt.Sprint(i) {
			t.Fatalf("handed out %s, want b/%d", r, i)
		}
	}
	q.Done("a")
	if n := q.Len(); n != 1997 {
		t.Fatalf("after one of a's is done, Len %d, want 1997", n)
	}
	if r := q.Pop(); r != req("a", 3) {
		t.Fatalf("handed out %s, want a/3", r)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("a at the limit again, yet Len %d", n)
	}
}
