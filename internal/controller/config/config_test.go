package config

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

type handedOn struct{ n int }

func (h *handedOn) Reconcile(context.Context, reconcile.Request) (reconcile.Result, error) {
	h.n++
	return reconcile.Result{}, nil
}

// TestForgetsTheClientsOfADeletedConfig: the client cache holds a client per
// provider config, per team key and per other key. When a config is deleted
// they must go (they hold keys and connection pools), and nobody else's.
func TestForgetsTheClientsOfADeletedConfig(t *testing.T) {
	s := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}).Build()
	cache := terdut.NewCache()
	o := terdut.Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_x"}
	for _, owner := range []string{"ClusterProviderConfig/gone", "ClusterProviderConfig/gone/team/7", "ClusterProviderConfig/gone/ServiceAccount/crossplane-system/op/own", "ClusterProviderConfig/kept", "ClusterProviderConfig/kept/team/8"} {
		if _, err := cache.Get(owner, o); err != nil {
			t.Fatal(err)
		}
	}
	inner := &handedOn{}
	f := &Forgetting{Reconciler: inner, Kube: kube, Clients: cache, Kind: v1alpha1.ClusterProviderConfigKind, NewObject: func() client.Object { return &v1alpha1.ClusterProviderConfig{} }}
	for _, name := range []string{"gone", "kept"} {
		if _, err := f.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if cache.Len() != 2 || inner.n != 2 {
		t.Errorf("%d clients cached, %d requests handed on; want the kept config's 2 clients, and both requests handed on", cache.Len(), inner.n)
	}
}

// A burst of usage changes is counted once per Every: the rest wait for the
// next count instead of listing every usage again; other configs are not held
// up.
func TestCoalescingCountsABurstOnce(t *testing.T) {
	inner := &handedOn{}
	now := time.Unix(1000, 0)
	c := &Coalescing{Reconciler: inner, Every: 2 * time.Second, now: func() time.Time { return now }}
	def := reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}
	for i := range 1000 {
		r, err := c.Reconcile(t.Context(), def)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && r.RequeueAfter != 2*time.Second {
			t.Fatalf("a held request asks to come back after %v, want 2s", r.RequeueAfter)
		}
	}
	if inner.n != 1 {
		t.Fatalf("1,000 usage changes at once were counted %d times, want 1", inner.n)
	}
	if _, err := c.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "other"}}); err != nil || inner.n != 2 {
		t.Fatalf("another config was held up: %d counts, err %v", inner.n, err)
	}
	now = now.Add(2 * time.Second)
	if r, err := c.Reconcile(t.Context(), def); err != nil || inner.n != 3 || r.RequeueAfter != 0 {
		t.Fatalf("when the time is up: %d counts, requeue %v, err %v; want the count handed on", inner.n, r.RequeueAfter, err)
	}
}

// A config the in-use finalizer does not guard yet (made a moment ago) is
// counted at once, however recently it was last: until it is, nothing stops
// its deletion while MRs use it, and those MRs could then never be deleted.
// A guarded config's burst is still held back.
func TestCoalescingNeverHoldsAnUnguardedConfig(t *testing.T) {
	s := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Finalizers: []string{"in-use.crossplane.io"}}},
	).Build()
	inner := &handedOn{}
	now := time.Unix(1000, 0)
	c := &Coalescing{
		Reconciler: inner, Every: 2 * time.Second, now: func() time.Time { return now },
		Urgent: Unguarded(kube, func() client.Object { return &v1alpha1.ClusterProviderConfig{} }),
	}
	for _, name := range []string{"gone", "new", "guarded"} {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
		before := inner.n
		for range 3 {
			if _, err := c.Reconcile(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		want := 3
		if name == "guarded" {
			want = 1
		}
		if got := inner.n - before; got != want {
			t.Errorf("config %q: 3 requests within 2s were handed on %d times, want %d", name, got, want)
		}
	}
}
