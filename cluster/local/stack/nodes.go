package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Nodes without containers: kube-scheduler binds pods to a fake node, and
// kwok (sigs.k8s.io/kwok) plays the lifecycle of the pods bound to it, so a
// Deployment of one replica becomes Available. No container runs: a pod
// serves nothing.
const (
	KwokModule  = "sigs.k8s.io/kwok"
	KwokVersion = "v0.8.0"
	// KubeVersion is the control plane's (local.sh builds its API server
	// and controller manager from the same wrapper module).
	KubeVersion = "v1.35.4"
	// NodeName is the fake node's name.
	NodeName = "kwok-node-0"
	// NodeLabel selects the nodes kwok plays.
	NodeLabel = "type"
	// NodeLabelValue is NodeLabel's value on the fake node.
	NodeLabelValue = "kwok"
)

// kwokStages are the stages kwok v0.8.0 plays (it ships none by default),
// read from its module in the module cache, never copied: a node turns
// Ready at once; a bound pod is created, turns Ready 1-6 s later and is
// removed once deleted.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/pod/general/pod-create.yaml",
	"kustomize/stage/pod/general/pod-init-container-running.yaml",
	"kustomize/stage/pod/general/pod-init-container-completed.yaml",
	"kustomize/stage/pod/general/pod-ready.yaml",
	"kustomize/stage/pod/general/pod-complete.yaml",
	"kustomize/stage/pod/general/pod-delete.yaml",
}

// StartNodes builds (once) and starts kube-scheduler and kwok, registers
// the fake node and waits until it is Ready.
func (s *Stack) StartNodes(ctx context.Context) error {
	sched, err := s.kubeScheduler(ctx)
	if err != nil {
		return err
	}
	kwok, dir, err := s.kwok(ctx)
	if err != nil {
		return err
	}
	if _, err := s.Start(ctx, "kube-scheduler", sched, "--kubeconfig", s.Kubeconfig,
		"--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(10259+s.PortOffset)); err != nil {
		return err
	}
	args := []string{"--kubeconfig", s.Kubeconfig, "--manage-nodes-with-label-selector", NodeLabel + "=" + NodeLabelValue,
		"--node-ip", "127.0.0.1", "--node-lease-duration-seconds", "0"}
	for _, st := range kwokStages {
		args = append(args, "--config", filepath.Join(dir, st))
	}
	if _, err := s.Start(ctx, "kwok", kwok, args...); err != nil {
		return err
	}
	// NOTE: no kwok taint: nothing else here runs pods, and a pod composed
	// for a real cluster tolerates none.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        NodeName,
		Labels:      map[string]string{NodeLabel: NodeLabelValue, corev1.LabelHostname: NodeName, corev1.LabelOSStable: "linux"},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}
	if err := s.Kube.Create(ctx, n); err != nil {
		return fmt.Errorf("register node %s: %w", NodeName, err)
	}
	t0 := time.Now()
	if err := s.poll(ctx, "node "+NodeName+" Ready", 60*time.Second, func() (bool, error) {
		if err := s.Kube.Get(ctx, client.ObjectKey{Name: NodeName}, n); err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	// NOTE: the API server taints a new node node.kubernetes.io/not-ready;
	// kube-controller-manager's node lifecycle controller, which would lift
	// it once the node is Ready, does not run here (it would also want
	// heartbeats), so the stack lifts it.
	if len(n.Spec.Taints) > 0 {
		n.Spec.Taints = nil
		if err := s.Kube.Update(ctx, n); err != nil {
			return fmt.Errorf("lift node %s's taints: %w", NodeName, err)
		}
	}
	s.Stepf("node %s: Ready in %.1f s (kwok %s plays its pods; kube-scheduler %s binds them)", NodeName, time.Since(t0).Seconds(), KwokVersion, KubeVersion)
	return nil
}

// kubeScheduler builds kube-scheduler once, in the wrapper module local.sh
// builds the API server in (so it shares its build cache).
func (s *Stack) kubeScheduler(ctx context.Context) (string, error) {
	bin := filepath.Join(CacheDir(), "bin", "kube-scheduler-"+KubeVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src := filepath.Join(CacheDir(), "src", "kubernetes-"+KubeVersion)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		return "", fmt.Errorf("kube-scheduler: %s has no go.mod: run cluster/local/local.sh build first", src)
	}
	t0 := time.Now()
	s.Stepf("kube-scheduler %s: building (~1 min once the API server is built)", KubeVersion)
	ld := "-X k8s.io/component-base/version.gitVersion=" + KubeVersion +
		" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35"
	if err := goIn(ctx, src, "build", "-ldflags", ld, "-o", bin+".tmp", "k8s.io/kubernetes/cmd/kube-scheduler"); err != nil {
		return "", err
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	s.Stepf("kube-scheduler: built in %.0f s", time.Since(t0).Seconds())
	return bin, nil
}

// kwok builds kwok once through a wrapper module that requires it, and
// returns the binary and the module's folder (its stages).
func (s *Stack) kwok(ctx context.Context) (bin, dir string, err error) {
	if dir, err = moduleDir(ctx, KwokModule, KwokVersion); err != nil {
		return "", "", err
	}
	bin = filepath.Join(CacheDir(), "bin", "kwok-"+KwokVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin, dir, nil
	}
	t0 := time.Now()
	s.Stepf("kwok %s: building from its Go module (~3 min cold)", KwokVersion)
	src := filepath.Join(CacheDir(), "src", "kwok-"+KwokVersion)
	if err := os.MkdirAll(src, 0o750); err != nil {
		return "", "", err
	}
	mod := fmt.Sprintf("module local/kwok\n\ngo 1.26.0\n\ntool %s/cmd/kwok\n\nrequire %s %s\n", KwokModule, KwokModule, KwokVersion)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(mod), 0o600); err != nil {
		return "", "", err
	}
	if err := goIn(ctx, src, "mod", "tidy"); err != nil {
		return "", "", err
	}
	if err := goIn(ctx, src, "build", "-o", bin+".tmp", KwokModule+"/cmd/kwok"); err != nil {
		return "", "", err
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", "", err
	}
	s.Stepf("kwok: built in %.0f s", time.Since(t0).Seconds())
	return bin, dir, nil
}

// ZalandoModule and ZalandoVersion ship the `postgresql` CRD of Zalando's
// postgres-operator (manifests/postgresql.crd.yaml), which the end-to-end
// suite installs as it is.
const (
	ZalandoModule  = "github.com/zalando/postgres-operator"
	ZalandoVersion = "v1.14.0"
)

// ZalandoCRD is the path of postgres-operator's `postgresql` CRD in the
// module cache (downloaded if need be; never copied).
func ZalandoCRD(ctx context.Context) (string, error) {
	dir, err := moduleDir(ctx, ZalandoModule, ZalandoVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "manifests", "postgresql.crd.yaml"), nil
}
