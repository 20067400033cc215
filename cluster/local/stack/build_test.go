package stack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
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

// fakeJobs are jobs that record when they run and finish when released.
type fakeJobs struct {
	mu      sync.Mutex
	running map[string]bool
	most    int
	started []string
	release map[string]chan error
}

func (f *fakeJobs) job(name string, after ...string) *job {
	f.release[name] = make(chan error, 1)
	return &job{what: name, names: []string{name}, after: after, build: func(ctx context.Context) error {
		f.mu.Lock()
		f.running[name] = true
		f.started = append(f.started, name)
		f.most = max(f.most, len(f.running))
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.running, name)
			f.mu.Unlock()
		}()
		select {
		case err := <-f.release[name]:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
}

func (f *fakeJobs) startedNow() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

// waitStarted waits until the jobs started are want, in that order.
func (f *fakeJobs) waitStarted(t *testing.T, want ...string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if slices.Equal(f.startedNow(), want) {
			return
		}
	}
	t.Fatalf("jobs started %v, want %v", f.startedNow(), want)
}

// Builds run what was asked for in the order asked, two at a time, a job
// only after those it comes after, nothing cached, and Wait says which
// failed.
func TestBuildsRunTheLongestFirstTwoAtATime(t *testing.T) {
	f := &fakeJobs{running: map[string]bool{}, release: map[string]chan error{}}
	jobs := []*job{f.job("apiserver"), f.job("etcd"), f.job("crossplane"), f.job("cached"), f.job("controllers", "apiserver"), f.job("kwok")}
	b, err := startJobs(t.Context(), io.Discard, jobs, func(n []string) bool { return n[0] == "cached" }, "apiserver", "etcd", "crossplane", "cached")
	if err != nil {
		t.Fatal(err)
	}
	f.waitStarted(t, "apiserver", "etcd")
	if err := b.Add("controllers", "kwok"); err != nil {
		t.Fatal(err)
	}
	f.release["etcd"] <- nil
	f.waitStarted(t, "apiserver", "etcd", "crossplane")
	f.release["crossplane"] <- nil
	// The controllers share the API server's packages: kwok goes first.
	f.waitStarted(t, "apiserver", "etcd", "crossplane", "kwok")
	f.release["apiserver"] <- nil
	if err := b.Wait(t.Context(), "apiserver", "etcd", "crossplane", "cached"); err != nil {
		t.Errorf("Wait for the core: %v", err)
	}
	f.waitStarted(t, "apiserver", "etcd", "crossplane", "kwok", "controllers")
	f.release["kwok"] <- errors.New("no module")
	f.release["controllers"] <- nil
	if err := b.Wait(t.Context(), "controllers", "kwok"); err == nil || !strings.Contains(err.Error(), "kwok: no module") {
		t.Errorf("Wait for a failed build: %v, want its error", err)
	}
	if f.most > lanes {
		t.Errorf("%d builds ran at once, want at most %d", f.most, lanes)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Wait(ctx, "never-asked"); err == nil {
		t.Error("Wait for an unknown binary: no error")
	}
}
