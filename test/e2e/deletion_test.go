//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// An object whose deletion the suite times, by its role ("ServiceAccount",
// "Deployment", ...).
type watched struct {
	role, apiVersion, kind, ns, name string
}

func (w watched) String() string {
	if w.ns == "" {
		return w.kind + " " + w.name
	}
	return w.kind + " " + w.ns + "/" + w.name
}

func (w watched) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(w.apiVersion)
	u.SetKind(w.kind)
	return u
}

// A deletion records when each watched object was deleted: the etcd
// revision of its DELETED event (one etcd orders every write of the
// cluster, whatever the kind) and when the suite saw it.
type deletion struct {
	start   time.Time
	objects []watched
	mu      sync.Mutex
	goneAt  map[string]deletedAt // by role
	stop    context.CancelFunc
	stopped sync.WaitGroup
}

type deletedAt struct {
	rev int64
	at  time.Duration
}

// watchDeletion watches each object from the revision it is read at (so no
// deletion is missed); every object must exist.
func watchDeletion(t *testing.T, objects []watched) *deletion {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.stack.Config)
	must(t, err, "a dynamic client")
	ctx, cancel := context.WithCancel(context.Background())
	d := &deletion{start: time.Now(), objects: objects, goneAt: map[string]deletedAt{}, stop: cancel}
	t.Cleanup(d.stop)
	for _, o := range objects {
		u := o.object()
		if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: o.ns, Name: o.name}, u); err != nil {
			t.Fatalf("%s (%s) before the deletion: %v", o, o.role, err)
		}
		gvk := u.GroupVersionKind()
		m, err := env.kube.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		must(t, err, "map "+gvk.String())
		w, err := dyn.Resource(m.Resource).Namespace(o.ns).Watch(ctx, metav1.ListOptions{
			FieldSelector: "metadata.name=" + o.name, ResourceVersion: u.GetResourceVersion(),
		})
		must(t, err, "watch "+o.String())
		d.stopped.Go(func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Deleted {
					continue
				}
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rev, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
				d.mu.Lock()
				d.goneAt[o.role] = deletedAt{rev: rev, at: time.Since(d.start)}
				d.mu.Unlock()
				return
			}
		})
	}
	return d
}

// gone is what is deleted so far, by role.
func (d *deletion) gone() map[string]deletedAt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.goneAt)
}

// wait waits until every watched object is deleted, then prints the
// order.
func (d *deletion) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "every object of the deletion gone", func() string {
		g := d.gone()
		var left []string
		for _, o := range d.objects {
			if _, ok := g[o.role]; !ok {
				left = append(left, o.String())
			}
		}
		if len(left) > 0 {
			return "still there: " + strings.Join(left, ", ")
		}
		return ""
	})
	d.stop()
	d.stopped.Wait()
	g := d.gone()
	order := slices.Clone(d.objects)
	slices.SortStableFunc(order, func(a, b watched) int { return cmp.Compare(g[a.role].rev, g[b.role].rev) })
	fmt.Println("    deleted in this order (etcd revision of the deletion, seconds after the delete):")
	for _, o := range order {
		fmt.Printf("      %8d  %6.1f s  %s\n", g[o.role].rev, g[o.role].at.Seconds(), o)
	}
}

// before fails unless every role in first was deleted before every role
// in then.
func (d *deletion) before(t *testing.T, first []string, then ...string) {
	t.Helper()
	g := d.gone()
	for _, a := range first {
		for _, b := range then {
			if g[a].rev >= g[b].rev {
				t.Errorf("%s was deleted at revision %d, not before %s (revision %d)", a, g[a].rev, b, g[b].rev)
			}
		}
	}
}

// xrName is the composite a claim is bound to.
func xrName(t *testing.T, ns, kind, name string) string {
	t.Helper()
	out, err := kubectlOut(nil, "-n", ns, "get", kind, name, "-o", "jsonpath={.spec.resourceRef.name}")
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("the composite of %s %s/%s: %q %v", kind, ns, name, out, err)
	}
	return strings.TrimSpace(out)
}

const (
	platformGroup = "platform.terdut.ryuvia.com/v1alpha1"
	terdutGroup   = "terdut.ryuvia.com/v1alpha1"
	usageGroup    = "protection.crossplane.io/v1beta1"
)

// serverObjects is what a TerdutServer claim ns/name composes (no
// HTTPRoute), the claim and its composite.
func serverObjects(t *testing.T, ns, name string) []watched {
	t.Helper()
	pc := ns + "." + name
	sa := pc + "-instance"
	return []watched{
		{"TerdutServer", platformGroup, "TerdutServer", ns, name},
		{"XTerdutServer", platformGroup, "XTerdutServer", "", xrName(t, ns, "terdutserver", name)},
		{"Deployment", "apps/v1", "Deployment", ns, name},
		{"Service", "v1", "Service", ns, name},
		{"ServiceAccount", terdutGroup, "ServiceAccount", "crossplane-system", sa},
		{"instance key Secret", "v1", "Secret", "crossplane-system", sa + "-credentials"},
		{"ClusterProviderConfig", terdutGroup, "ClusterProviderConfig", "", pc},
		{"Usage of the Deployment", usageGroup, "Usage", "crossplane-system", sa + "-uses-deployment"},
		{"Usage of the Service", usageGroup, "Usage", "crossplane-system", sa + "-uses-service"},
	}
}

// teamObjects is what the example TerdutTeam claim ns/name composes, the
// claim and its composite.
func teamObjects(t *testing.T, ns, name string, switches, integrations []string) []watched {
	t.Helper()
	out := make([]watched, 0, 2*(5+len(switches)+len(integrations)))
	out = append(out, []watched{
		{"TerdutTeam", platformGroup, "TerdutTeam", ns, name},
		{"XTerdutTeam", platformGroup, "XTerdutTeam", "", xrName(t, ns, "terdutteam", name)},
		{"ClusterUsage of the server", usageGroup, "ClusterUsage", "", "terdutteam." + ns + "." + name},
		{"Team", terdutGroup, "Team", ns, name},
		{"EscalationPolicy", terdutGroup, "EscalationPolicy", ns, name},
	}...)
	for _, s := range switches {
		out = append(out, watched{"DeadmanSwitch " + s, terdutGroup, "DeadmanSwitch", ns, name + "-" + s})
	}
	for _, i := range integrations {
		out = append(out, watched{"Integration " + i, terdutGroup, "Integration", ns, name + "-" + i})
	}
	// Each MR holds the server's bootstrap ServiceAccount with a Usage.
	for _, o := range slices.Clone(out[3:]) {
		out = append(out, watched{"Usage by " + o.role, usageGroup, "Usage", ns, strings.ToLower(o.kind) + "." + o.name + "-uses-server"})
	}
	return out
}

// roles are the roles of objects whose kind is one of kinds.
func roles(objects []watched, kinds ...string) []string {
	var out []string
	for _, o := range objects {
		if slices.Contains(kinds, o.kind) {
			out = append(out, o.role)
		}
	}
	return out
}
