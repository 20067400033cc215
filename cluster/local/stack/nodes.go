package stack

import (
	"context"
	"fmt"
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
	// KubeVersion is the control plane's: its API server, controller
	// manager and scheduler are built from one wrapper module.
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
func kwokStages() []string {
	return []string{
		"kustomize/stage/node/fast/node-initialize.yaml",
		"kustomize/stage/pod/general/pod-create.yaml",
		"kustomize/stage/pod/general/pod-init-container-running.yaml",
		"kustomize/stage/pod/general/pod-init-container-completed.yaml",
		"kustomize/stage/pod/general/pod-ready.yaml",
		"kustomize/stage/pod/general/pod-complete.yaml",
		"kustomize/stage/pod/general/pod-delete.yaml",
	}
}

// StartNodes starts kube-controller-manager (unless it runs), kube-scheduler
// and kwok (waiting for their builds), registers the fake node and waits
// until it is Ready.
func (s *Stack) StartNodes(ctx context.Context) error {
	t0 := time.Now()
	if err := s.built(ctx, NodeBinaries()...); err != nil {
		return err
	}
	if t := time.Since(t0); t > time.Second {
		s.Stepf("nodes: waited %.0f s for their binaries", t.Seconds())
	}
	if !s.controllers {
		if err := s.StartControllers(ctx); err != nil {
			return err
		}
	}
	sched, kwok := mustBinary(binScheduler), mustBinary(binKwok)
	dir, err := moduleDir(ctx, KwokModule, KwokVersion)
	if err != nil {
		return err
	}
	if _, err := s.Start(ctx, "kube-scheduler", sched, "--kubeconfig", s.Kubeconfig,
		"--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(portScheduler+s.PortOffset)); err != nil {
		return err
	}
	args := []string{
		"--kubeconfig", s.Kubeconfig, "--manage-nodes-with-label-selector", NodeLabel + "=" + NodeLabelValue,
		"--node-ip", "127.0.0.1", "--node-lease-duration-seconds", "0",
	}
	for _, st := range kwokStages() {
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
	t0 = time.Now()
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
