package config

import (
	"context"
	"testing"

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
