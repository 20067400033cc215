package adjust

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestTheStateMetricsListTheCacheUncopied: the MR state recorder still
// counts the Ready MRs, and its lists ask the cache for its own objects,
// not for a copy of every MR every 5 s.
func TestTheStateMetricsListTheCacheUncopied(t *testing.T) {
	ready := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a"}}
	ready.SetConditions(xpv2.Available())
	creating := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b"}}
	creating.SetConditions(xpv2.Creating())
	copied := 0
	kube := fake.NewClientBuilder().WithScheme(controllertest.Scheme(t)).WithObjects(ready, creating).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			o := (&client.ListOptions{}).ApplyOptions(opts)
			if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
				copied++
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	m := statemetrics.NewMRStateMetrics()
	r := statemetrics.NewMRStateRecorder(ListsUncopied{Client: kube}, logging.NewNopLogger(), m, &v1alpha1.TeamList{}, 0)
	if err := r.Record(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.Ready); got != 1 {
		t.Errorf("Ready MRs recorded: %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Exists); got != 2 {
		t.Errorf("MRs recorded: %v, want 2", got)
	}
	if copied != 0 {
		t.Errorf("%d lists asked for copies of every MR", copied)
	}
}
