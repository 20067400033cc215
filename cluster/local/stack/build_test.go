package stack

import (
	"strings"
	"testing"
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
