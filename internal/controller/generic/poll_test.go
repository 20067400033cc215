package generic

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestThePollAnnotationIsClamped: a tenant annotates an MR to be polled
// every 50ms; crossplane-runtime's reconciler, with the provider's poll
// options, polls it every --min-poll-interval instead.
func TestThePollAnnotationIsClamped(t *testing.T) {
	s := controllertest.Scheme(t)
	for _, tc := range []struct {
		annotation string
		want       time.Duration
	}{
		{annotation: "50ms", want: 10 * time.Second},
		{annotation: "1ns", want: 10 * time.Second},
		{annotation: "30s", want: 30 * time.Second},
		{annotation: "", want: time.Minute},
	} {
		t.Run(tc.annotation, func(t *testing.T) {
			cr := &v1alpha1.EscalationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "noisy"}}
			meta.SetExternalName(cr, "7")
			if tc.annotation != "" {
				meta.AddAnnotations(cr, map[string]string{meta.AnnotationKeyPollInterval: tc.annotation})
			}
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cr).WithStatusSubresource(cr).Build()
			upToDate := managed.TypedExternalConnectorFn[*v1alpha1.EscalationPolicy](func(context.Context, *v1alpha1.EscalationPolicy) (managed.TypedExternalClient[*v1alpha1.EscalationPolicy], error) {
				return &managed.TypedExternalClientFns[*v1alpha1.EscalationPolicy]{
					ObserveFn: func(context.Context, *v1alpha1.EscalationPolicy) (managed.ExternalObservation, error) {
						return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
					},
					DisconnectFn: func(context.Context) error { return nil },
				}, nil
			})
			o := Options{Options: controller.Options{PollInterval: time.Minute}, MinPollInterval: 10 * time.Second}
			r := controllertest.NewManagedReconciler[*v1alpha1.EscalationPolicy](controllertest.FakeManager(kube, s), v1alpha1.EscalationPolicyGroupVersionKind, upToDate, o.PollOptions()...)
			res, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "noisy"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tc.want {
				t.Errorf("poll-interval %q: polled again after %v, want %v", tc.annotation, res.RequeueAfter, tc.want)
			}
		})
	}
}
