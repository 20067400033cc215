package stack

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// The API server's wrapper module points every staging module of
// k8s.io/kubernetes at its published version, and nothing else.
func TestKubeWrapper(t *testing.T) {
	src := `module k8s.io/kubernetes

require (
	k8s.io/api v0.0.0
	github.com/spf13/cobra v1.10.1
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/example/fork => github.com/example/fork v1.2.3
)
`
	got := kubeWrapper([]byte(src))
	for _, want := range []string{"require k8s.io/kubernetes " + KubeVersion, "\tk8s.io/api => k8s.io/api " + KubeStagingVersion, "\tk8s.io/client-go => k8s.io/client-go " + KubeStagingVersion} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("wrapper module lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "example/fork") || strings.Contains(got, "./staging") {
		t.Errorf("wrapper module keeps a replace it must not:\n%s", got)
	}
}

// Crossplane's wrapper module keeps its requirements, drops its replace of
// ./apis and requires apis/v2 and crossplane/v2 at the version built.
func TestCrossplaneWrapper(t *testing.T) {
	src := `module github.com/crossplane/crossplane/v2

go 1.24.0

require (
	github.com/crossplane/crossplane-runtime/v2 v2.4.0
	github.com/crossplane/crossplane/apis/v2 v2.0.0-00010101000000-000000000000
)

replace github.com/crossplane/crossplane/apis/v2 => ./apis
`
	got := crossplaneWrapper([]byte(src), "v2.2.0")
	for _, want := range []string{"module local/crossplane", "\tgithub.com/crossplane/crossplane-runtime/v2 v2.4.0", "\tgithub.com/crossplane/crossplane/apis/v2 v2.2.0", "require github.com/crossplane/crossplane/v2 v2.2.0"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("wrapper module lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=> ./apis") {
		t.Errorf("wrapper module keeps the replace of ./apis:\n%s", got)
	}
}

// Binary knows every part the stack runs, and only those.
func TestBinary(t *testing.T) {
	for _, n := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "crossplane", "crank", "registry", "alertmanager", "kwok"} {
		if p, err := Binary(n); err != nil || !strings.HasPrefix(p, CacheDir()+"/bin/"+n+"-v") {
			t.Errorf("Binary(%q) = %q, %v", n, p, err)
		}
	}
	if _, err := Binary("kubelet"); err == nil {
		t.Error("Binary(kubelet): want an error")
	}
}

// The stack's CA signs a server certificate for 127.0.0.1 that verifies
// against it, the way the API server's and the function's are made.
func TestIssue(t *testing.T) {
	ca, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "srv"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca.cert, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	if _, err := srv.cert.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
		t.Errorf("the server certificate does not verify against the CA: %v", err)
	}
	if err := srv.cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if _, err := tls.X509KeyPair(srv.certPEM, srv.keyPEM); err != nil {
		t.Errorf("the PEM pair does not load: %v", err)
	}
}
