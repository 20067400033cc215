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
