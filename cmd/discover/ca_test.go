package main

import (
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestDiscoveryTrustsTheProviderConfigsCABundle: the provider reads an
// https server with a private CA through the config's caBundleSecretRef;
// discovery, given the same config, must too.
func TestDiscoveryTrustsTheProviderConfigsCABundle(t *testing.T) {
	const key = "tdk_review_admin"
	hs := httptest.NewTLSServer(terdutdouble.New(terdutdouble.Options{AdminKey: key}).Handler())
	defer hs.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "key")}
	cpc.Spec.Endpoint = hs.URL
	cpc.Spec.CABundleSecretRef = &v1alpha1.SecretKeySelector{Namespace: "crossplane-system", Name: "ca", Key: "ca.crt"}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cpc,
		controllertest.KeySecret("crossplane-system", "key", key),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "ca"}, Data: map[string][]byte{"ca.crt": ca}},
	).Build()
	ref, ns := reference("default")

	// The provider's own path: the config's options, no transport given.
	cfg, err := credentials.GetProviderConfig(t.Context(), kube, ref, ns)
	if err != nil {
		t.Fatal(err)
	}
	po, err := credentials.ClientOptions(t.Context(), kube, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := terdut.New(po)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.ListTeams(t.Context()); err != nil {
		t.Fatalf("the provider's client: %v", err)
	}

	c, _, err := serverClient(t.Context(), kube, flags{providerConfig: "default", out: t.TempDir()}, ref, ns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTeams(t.Context()); err != nil {
		t.Errorf("discovery's client, same provider config: %v", err)
	}

	// With the key in a file (the config's key Secret unreadable here: it
	// is gone), the config's CA bundle still applies.
	must(t, kube.Delete(t.Context(), controllertest.KeySecret("crossplane-system", "key", key)))
	file := filepath.Join(t.TempDir(), "key")
	must(t, os.WriteFile(file, []byte(key+"\n"), 0o600))
	c, _, err = serverClient(t.Context(), kube, flags{providerConfig: "default", out: t.TempDir(), endpoint: hs.URL, keyFile: file}, ref, ns)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTeams(t.Context()); err != nil {
		t.Errorf("discovery's client, --key-file and the config's CA bundle: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
