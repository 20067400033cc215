package serviceaccount

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

type nopTracker struct{}

func (nopTracker) Track(context.Context, resource.ModernManaged) error { return nil }

// TestClientsComeFromTheCache: a bootstrapping ServiceAccount talks to the
// server with several keys (none, the checkpoint, its own). Each must be a
// cached client: once it has converged, further reconciles open no new
// connections to the server (a client per call would open one each time).
// Its provider config names a Secret nobody writes, so it goes on managing
// itself with its own key.
func TestClientsComeFromTheCache(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{})
	hs := httptest.NewUnstartedServer(double.Handler())
	var conns atomic.Int64
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	defer hs.Close()

	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}, Spec: v1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: v1alpha1.ProviderConfigSpec{
		Endpoint:    hs.URL,
		Credentials: v1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: &v1alpha1.SecretKeySelector{Namespace: ns, Name: "written-by-someone-else", Key: SecretKeyToken}},
	}}}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cpc).Build()
	c := &generic.Connector[*v1alpha1.ServiceAccount]{
		Kube: kube, Reader: kube, Usage: nopTracker{}, Record: event.NewNopRecorder(),
		Servers:     &credentials.Servers{Kube: kube, Reader: kube, Clients: terdut.NewCache()},
		Credentials: credentials.BootstrapKey[*v1alpha1.ServiceAccount](),
		External:    New,
	}
	cr := sa()
	cr.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "fresh"})
	var settled int64
	for i := range 8 {
		ext, err := c.Connect(t.Context(), cr)
		if err != nil {
			t.Fatalf("reconcile %d: Connect: %v", i, err)
		}
		o, err := ext.Observe(t.Context(), cr)
		if err != nil {
			t.Fatalf("reconcile %d: Observe: %v", i, err)
		}
		switch {
		case !o.ResourceExists:
			_, err = ext.Create(t.Context(), cr)
		case !o.ResourceUpToDate:
			_, err = ext.Update(t.Context(), cr)
		}
		if err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
		if i == 2 {
			settled = conns.Load()
		}
	}
	if n := conns.Load() - settled; n != 0 {
		t.Errorf("5 reconciles of a converged ServiceAccount opened %d new connections to the server, want 0 (every client from the cache)", n)
	}
	t.Logf("connections: %d to converge, %d after", settled, conns.Load()-settled)
}
