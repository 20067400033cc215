package generic

import (
	"encoding/pem"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestConnectOptionalCredentialsKeepCABundle: a bootstrapping
// ServiceAccount connects before its provider config's key exists. Against
// an https server with a private CA, the client it gets (and every client
// it builds with another key) must still trust that CA.
func TestConnectOptionalCredentialsKeepCABundle(t *testing.T) {
	hs := httptest.NewTLSServer(terdutdouble.New(terdutdouble.Options{}).Handler())
	defer hs.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw})
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}, Spec: controllertest.CPCSpec("crossplane-system", "not-written-yet")}
	cpc.Spec.Endpoint = hs.URL
	cpc.Spec.CABundleSecretRef = &v1alpha1.SecretKeySelector{Namespace: "crossplane-system", Name: "ca", Key: "ca.crt"}
	kube := fakeBuilder(t).WithObjects(cpc,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "ca"}, Data: map[string][]byte{"ca.crt": ca}},
	).Build()
	sa := &v1alpha1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "bootstrap", UID: "sa"}}
	sa.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "fresh"})

	c := newTestConnector(kube, func() resource.ManagedList { return &v1alpha1.ServiceAccountList{} }, "ServiceAccount", credentials.BootstrapKey[*v1alpha1.ServiceAccount]())
	if _, err := c.Connect(t.Context(), sa); err != nil {
		t.Fatalf("Connect without the key yet: %v", err)
	}
	if err := c.got.Client.Healthz(t.Context()); err != nil {
		t.Errorf("the unauthenticated client does not trust the provider config's CA bundle: %v", err)
	}
	withKey, err := c.got.Conn.WithKey("own", "tdk_some_key")
	if err != nil {
		t.Fatal(err)
	}
	if err := withKey.Healthz(t.Context()); err != nil {
		t.Errorf("a client built with another key does not trust the CA bundle: %v", err)
	}
}
