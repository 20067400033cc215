//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// scenariof prints what a test checks, so `make e2e` reads as a list.
func scenariof(t *testing.T, format string, args ...any) {
	t.Helper()
	fmt.Printf("--- scenario %s: %s\n", t.Name(), fmt.Sprintf(format, args...))
}

// eventually retries check until it returns "" or d passes; it fails the
// test with the last complaint.
func eventually(t *testing.T, d time.Duration, what string, check func() string) {
	t.Helper()
	last := ""
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if last = check(); last == "" {
			return
		}
	}
	t.Fatalf("%s: not within %s: %s", what, d, last)
}

// must fails the test when err is set: an injection (drift, a fault) that
// did not happen would otherwise read as "handled".
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// allowed is the label the suite's ClusterProviderConfig admits namespaces by
// (examples/providerconfig/clusterproviderconfig.yaml).
var allowed = map[string]string{"terdut.ryuvia.com/allowed-server": "default"}

// namespace creates a namespace; nil labels means the admitted label.
func namespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	if labels == nil {
		labels = allowed
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := env.kube.Create(t.Context(), ns); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func apply(t *testing.T, yaml string) {
	t.Helper()
	if err := kubectl([]byte(yaml), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, mg resource.Managed) resource.Managed {
	t.Helper()
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}, mg); err != nil {
		t.Fatalf("get %s: %v", mg.GetName(), err)
	}
	return mg
}

// ready waits until mg is Ready=True and Synced=True, and returns it.
func ready(t *testing.T, mg resource.Managed) resource.Managed {
	t.Helper()
	condition(t, mg, xpv2.TypeReady, corev1.ConditionTrue, "")
	condition(t, mg, xpv2.TypeSynced, corev1.ConditionTrue, "")
	return mg
}

// condition waits until mg's condition ct has status s (and reason r, when
// not empty), written by a reconcile of mg's current spec: a condition
// stamped with an older generation (written before the spec changed) does
// not satisfy it.
func condition(t *testing.T, mg resource.Managed, ct xpv2.ConditionType, s corev1.ConditionStatus, r xpv2.ConditionReason) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%s %s=%s %s", mg.GetName(), ct, s, r), func() string {
		if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}, mg); err != nil {
			return err.Error()
		}
		return conditionIs(mg, ct, s, r)
	})
}

// conditionIs says why mg's condition ct is not (yet) status s with reason
// r (any, when empty), written for mg's current generation; "" when it is.
func conditionIs(mg resource.Managed, ct xpv2.ConditionType, s corev1.ConditionStatus, r xpv2.ConditionReason) string {
	c := mg.GetCondition(ct)
	switch {
	case c.Status != s || (r != "" && c.Reason != r):
		return fmt.Sprintf("%s is %s (%s): %s", ct, c.Status, c.Reason, c.Message)
	case c.ObservedGeneration != mg.GetGeneration():
		return fmt.Sprintf("%s %s was written for generation %d; the spec is at %d", ct, c.Status, c.ObservedGeneration, mg.GetGeneration())
	}
	return ""
}

// externalID waits for mg's external name and returns it as an ID.
func externalID(t *testing.T, mg resource.Managed) int64 {
	t.Helper()
	var id int64
	eventually(t, 30*time.Second, mg.GetName()+" external-name", func() string {
		get(t, mg)
		n, err := strconv.ParseInt(meta.GetExternalName(mg), 10, 64)
		if err != nil {
			return "no numeric external-name yet"
		}
		id = n
		return ""
	})
	return id
}

// deleteAndWait deletes mg and waits until it is gone (its finalizer
// removed). NOTE: up to 90 s: an MR that failed many reconciles in a row
// (one refused by consent, say) has its confirming reconcile delayed by
// crossplane-runtime's per-item backoff, up to 60 s.
func deleteAndWait(t *testing.T, mg client.Object) {
	t.Helper()
	if err := env.kube.Delete(t.Context(), mg); err != nil && !kerrors.IsNotFound(err) {
		t.Fatalf("delete %s: %v", mg.GetName(), err)
	}
	eventually(t, 90*time.Second, mg.GetName()+" gone", func() string {
		err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}, mg)
		if kerrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("still there (finalizers %v)", mg.GetFinalizers())
	})
}

// noCascade makes the double at url keep a deleted team's service
// accounts, so that "no team-scoped account left" proves the provider
// deleted them (a real server may not cascade).
func noCascade(t *testing.T, url string) {
	t.Helper()
	must(t, adminAt(url, http.MethodPut, "/admin/quirks", terdutdouble.Quirks{NoCascade: true}, nil), "turn the double's cascade off")
}

// freshDouble starts another terdut-server double with no users at all (so
// only POST /api/bootstrap opens it), logged as terdut-double-NAME, and
// returns its URL. The leak check covers its keys too.
func freshDouble(t *testing.T, name string) string {
	t.Helper()
	d, err := env.stack.StartDouble(t.Context(), "terdut-double-"+name, "-fresh")
	if err != nil {
		t.Fatal(err)
	}
	addDouble(d.URL)
	noCascade(t, d.URL)
	return d.URL
}
