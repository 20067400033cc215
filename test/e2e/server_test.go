//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

// firsts records, polling every 100 ms, when the server's Deployment first
// had a ready replica and when the double first saw /api/bootstrap.
type firsts struct {
	t0         time.Time
	stop, done chan struct{}
	mu         sync.Mutex
	ready      time.Duration // -1: not yet
	boot       time.Duration // -1: not yet
}

func watchFirsts(t *testing.T, url, ns, name string) *firsts {
	t.Helper()
	f := &firsts{t0: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), ready: -1, boot: -1}
	go func() {
		defer close(f.done)
		for {
			select {
			case <-f.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			d := &appsv1.Deployment{}
			ready := env.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d) == nil && d.Status.ReadyReplicas >= 1
			var counts map[string]int
			boot := adminAt(url, http.MethodGet, "/admin/counters", nil, &counts) == nil && counts["POST /api/bootstrap"] > 0
			f.mu.Lock()
			if ready && f.ready < 0 {
				f.ready = time.Since(f.t0)
			}
			if boot && f.boot < 0 {
				f.boot = time.Since(f.t0)
			}
			f.mu.Unlock()
		}
	}()
	return f
}

func (f *firsts) get() (ready, boot time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready, f.boot
}

func (f *firsts) close() {
	close(f.stop)
	<-f.done
}

// serverWithReadyReplica applies srvYAML (a TerdutServer claim with one
// replica) while kwok is paused, so its pod is bound to the node but not
// Ready; shows that no /api/bootstrap reaches the server and that the
// claim's Bootstrapped condition says what it waits for; then lets the pod
// turn Ready and waits for the claim.
func serverWithReadyReplica(t *testing.T, url, srvYAML string) *claim {
	t.Helper()
	pid, ok := env.stack.PID("kwok")
	if !ok {
		t.Fatal("kwok is not running: the suite's stack starts it (stack.Options.Nodes)")
	}
	must(t, syscall.Kill(pid, syscall.SIGSTOP), "pause kwok")
	paused := true
	resume := func() {
		if paused {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			paused = false
		}
	}
	defer resume()

	f := watchFirsts(t, url, "platform-oncall", "terdut")
	defer f.close()
	apply(t, srvYAML)
	const waiting = "False WaitingForReadyReplica"
	held := waiting + ": " + claimCondition(t, "platform-oncall", "terdutserver", "terdut", "Bootstrapped", waiting)
	var pod *corev1.Pod
	eventually(t, time.Minute, "the server's pod bound to "+stack.NodeName, func() string {
		pods := &corev1.PodList{}
		if err := env.kube.List(t.Context(), pods, client.InNamespace("platform-oncall"), client.MatchingLabels{"app.kubernetes.io/instance": "terdut"}); err != nil {
			return err.Error()
		}
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName == stack.NodeName {
				pod = &pods.Items[i]
				return ""
			}
		}
		return fmt.Sprintf("%d pods, none bound yet", len(pods.Items))
	})
	time.Sleep(10 * time.Second) // the provider had every chance to bootstrap
	var counts map[string]int
	must(t, adminAt(url, http.MethodGet, "/admin/counters", nil, &counts), "read the double's counters")
	if n := counts["POST /api/bootstrap"]; n != 0 {
		t.Fatalf("%d /api/bootstrap requests while the server's pod was not Ready", n)
	}
	fmt.Printf("    pod %s bound to %s, held not Ready (kwok paused) for %.0f s: 0 /api/bootstrap requests; Bootstrapped=%s\n",
		pod.Name, stack.NodeName, time.Since(f.t0).Seconds(), held)

	resume()
	sc := claimReady(t, "platform-oncall", "terdutserver", "terdut")
	eventually(t, 30*time.Second, "the first /api/bootstrap seen", func() string {
		if _, boot := f.get(); boot < 0 {
			return "none yet"
		}
		return ""
	})
	ready, boot := f.get()
	if ready < 0 || boot < ready {
		t.Fatalf("first ready replica at %s, first /api/bootstrap at %s after the claim: a bootstrap before a ready replica", ready, boot)
	}
	fmt.Printf("    from the claim: Deployment's first ready replica at %.1f s, first /api/bootstrap at %.1f s (none before: %.1f s later)\n",
		ready.Seconds(), boot.Seconds(), (boot - ready).Seconds())
	d := &appsv1.Deployment{}
	must(t, env.kube.Get(t.Context(), types.NamespacedName{Namespace: "platform-oncall", Name: "terdut"}, d), "read the Deployment")
	if d.Status.ReadyReplicas != 1 || deploymentAvailable(d) != corev1.ConditionTrue {
		t.Fatalf("Deployment platform-oncall/terdut: %d ready replicas, Available=%s; want 1, True", d.Status.ReadyReplicas, deploymentAvailable(d))
	}
	fmt.Printf("    Deployment platform-oncall/terdut: image %s, %d/%d ready, Available=%s\n",
		d.Spec.Template.Spec.Containers[0].Image, d.Status.ReadyReplicas, *d.Spec.Replicas, deploymentAvailable(d))
	return sc
}

// instanceKeyHash is a hash of the server's instance key (never the key).
func instanceKeyHash(t *testing.T) [32]byte {
	t.Helper()
	s := &corev1.Secret{}
	must(t, env.kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: "platform-oncall.terdut-instance-credentials"}, s), "read the instance key Secret")
	return sha256.Sum256(s.Data["token"])
}

// rollout changes the claim's image tag and follows the rollout: a new
// ReplicaSet, the claim reporting it while it runs, Ready again after, no
// new bootstrap and the same instance key.
func rollout(t *testing.T, url, tag string) {
	t.Helper()
	key := instanceKeyHash(t)
	old := replicaSets(t)
	t0 := time.Now()
	must(t, kubectl(nil, "-n", "platform-oncall", "patch", "terdutserver", "terdut", "--type=merge",
		"-p", `{"spec":{"image":{"tag":"`+tag+`"}}}`), "change the image tag")
	var during string
	eventually(t, 3*time.Minute, "the rollout to "+tag+" finished and the claim Ready again", func() string {
		c, err := getClaim("platform-oncall", "terdutserver", "terdut")
		if err != nil {
			return err.Error()
		}
		ready := ""
		for _, cd := range c.Status.Conditions {
			if cd.Type == "Ready" {
				ready = cd.Status
			}
		}
		if ready != "True" && during == "" && strings.Contains(c.Status.Summary, "Deployment") {
			during = fmt.Sprintf("at %.1f s Ready=%s, summary: %s", time.Since(t0).Seconds(), ready, c.Status.Summary)
		}
		d := &appsv1.Deployment{}
		if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: "platform-oncall", Name: "terdut"}, d); err != nil {
			return err.Error()
		}
		if !strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, ":"+tag) || d.Status.UpdatedReplicas != 1 || d.Status.ReadyReplicas != 1 ||
			d.Status.Replicas != 1 || d.Status.ObservedGeneration < d.Generation || ready != "True" || during == "" {
			return fmt.Sprintf("image %s, %d updated, %d ready, %d in all, claim Ready=%s, rollout seen on the claim: %t",
				d.Spec.Template.Spec.Containers[0].Image, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.Replicas, ready, during != "")
		}
		return ""
	})
	took := time.Since(t0)
	now := replicaSets(t)
	var added []string
	for name, img := range now {
		if _, ok := old[name]; !ok {
			added = append(added, name+" ("+img+")")
		}
	}
	if len(added) != 1 {
		t.Errorf("ReplicaSets before %v, after %v: want exactly one new", old, now)
	}
	var counts map[string]int
	must(t, adminAt(url, http.MethodGet, "/admin/counters", nil, &counts), "read the double's counters")
	if n := counts["POST /api/bootstrap"]; n != 1 {
		t.Errorf("/api/bootstrap called %d times in all, want 1 (no new bootstrap on a rollout)", n)
	}
	if k := instanceKeyHash(t); !bytes.Equal(k[:], key[:]) {
		t.Error("the instance key changed on a rollout")
	}
	fmt.Printf("    rollout to %s: new ReplicaSet %s; the claim meanwhile %s; Ready again after %.1f s; /api/bootstrap %d in all; instance key unchanged\n",
		tag, strings.Join(added, ", "), during, took.Seconds(), counts["POST /api/bootstrap"])
}

// replicaSets are the server's ReplicaSets, by name, with their image.
func replicaSets(t *testing.T) map[string]string {
	t.Helper()
	l := &appsv1.ReplicaSetList{}
	must(t, env.kube.List(t.Context(), l, client.InNamespace("platform-oncall"), client.MatchingLabels{"app.kubernetes.io/instance": "terdut"}), "list ReplicaSets")
	out := map[string]string{}
	for _, rs := range l.Items {
		out[rs.Name] = rs.Spec.Template.Spec.Containers[0].Image
	}
	return out
}
