package adjust

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
)

// DesiredStateChanged is crossplane-runtime's resource.DesiredStateChanged
// (a new generation, annotations or labels) without the MR's own writes on
// its way to a create: the external-create annotations (and the external
// name recorded with a succeeded create), the kind's own marks (own), and
// spec.forProvider.teamId set by resolving the team reference for the first
// time. The reconcile that wrote them always asks to run again itself; the
// event each write sends would only run it once more at once, often on a
// cache that has not seen its last write, which then fails with a conflict
// and backs off. At 5,000 MRs those reconciles were a third of the
// reconcile budget. Anyone else's change to the same fields, and any other
// change, still wakes the MR at once.
func DesiredStateChanged(own ...string) predicate.Predicate {
	// The annotations crossplane-runtime's managed reconciler writes on its
	// own way to a create, and the kind's.
	ownKeys := append([]string{meta.AnnotationKeyExternalCreatePending, meta.AnnotationKeyExternalCreateSucceeded, meta.AnnotationKeyExternalCreateFailed}, own...)
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			if o == nil || n == nil {
				return true
			}
			if !maps.Equal(o.GetLabels(), n.GetLabels()) {
				return true
			}
			if !onlyOwnAnnotations(o.GetAnnotations(), n.GetAnnotations(), ownKeys) {
				return true
			}
			return o.GetGeneration() != n.GetGeneration() && !teamIDResolved(o, n)
		},
	}
}

// onlyOwnAnnotations says whether every annotation that differs between
// o and n is one of own, or the external name changed with a succeeded
// create.
func onlyOwnAnnotations(o, n map[string]string, own []string) bool {
	keys := map[string]bool{}
	for k := range o {
		keys[k] = true
	}
	for k := range n {
		keys[k] = true
	}
	for k := range keys {
		if o[k] == n[k] {
			continue
		}
		switch {
		case k == meta.AnnotationKeyExternalName:
			if o[meta.AnnotationKeyExternalCreateSucceeded] == n[meta.AnnotationKeyExternalCreateSucceeded] {
				return false
			}
		case !slices.Contains(own, k):
			return false
		}
	}
	return true
}

// teamIDResolved says whether the only change of spec from o to n is
// spec.forProvider.teamId set for the first time, beside a team reference:
// the reference resolver's write.
func teamIDResolved(o, n client.Object) bool {
	os, ns := specOf(o), specOf(n)
	ofp, _ := os["forProvider"].(map[string]any)
	nfp, _ := ns["forProvider"].(map[string]any)
	if ofp == nil || nfp == nil || ofp["teamId"] != nil || nfp["teamId"] == nil || nfp["teamIdRef"] == nil {
		return false
	}
	delete(nfp, "teamId")
	return equality.Semantic.DeepEqual(os, ns)
}

// specOf is o's spec as a map (a copy).
func specOf(o client.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil
	}
	s, _ := u["spec"].(map[string]any)
	return s
}
