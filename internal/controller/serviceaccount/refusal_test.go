package serviceaccount

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpfake "github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestBootstrapStateLostReachesTheUser: crossplane-runtime
// sets Ready to Creating after any failed Create, so the BootstrapStateLost
// that Create found never reached the Ready condition users read. Run by
// the real managed reconciler, the MR as stored must say it after the
// refusal, without asking the server again each time.
func TestBootstrapStateLostReachesTheUser(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_someone_else"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()

	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}, Spec: v1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: v1alpha1.ProviderConfigSpec{
		Endpoint:    hs.URL,
		Credentials: v1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: &v1alpha1.SecretKeySelector{Namespace: ns, Name: "instance-credentials", Key: SecretKeyToken}},
	}}}
	cr := sa()
	cr.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "fresh"})
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cpc, cr).WithStatusSubresource(cr).Build()
	conn := &generic.Connector[*v1alpha1.ServiceAccount]{
		Kube: kube, Reader: kube, Usage: nopTracker{}, Record: event.NewNopRecorder(),
		Servers:     &credentials.Servers{Kube: kube, Reader: kube, Clients: terdut.NewCache()},
		Credentials: credentials.BootstrapKey[*v1alpha1.ServiceAccount](),
		External:    New,
		Refusals:    adjust.NewRefusals(),
	}
	r := managed.NewReconciler(&xpfake.Manager{Client: kube, Scheme: s, Logger: logr.Discard()},
		resource.ManagedKind(v1alpha1.ServiceAccountGroupVersionKind),
		managed.WithTypedExternalConnector[*v1alpha1.ServiceAccount](conn),
		managed.WithInitializers(),
		managed.WithPollInterval(time.Minute),
		managed.WithRecorder(event.NewNopRecorder()),
	)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: cr.GetName()}}
	for range 3 {
		_, _ = r.Reconcile(t.Context(), req)
	}
	got := &v1alpha1.ServiceAccount{}
	if err := kube.Get(t.Context(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if c := got.GetCondition(xpv2.TypeReady); c.Reason != ReasonBootstrapStateLost || c.Status != corev1.ConditionFalse {
		t.Errorf("Ready as stored = %s %s %q, want False %s", c.Status, c.Reason, c.Message, ReasonBootstrapStateLost)
	}
	if n := double.Count("POST /api/bootstrap"); n != 1 {
		t.Errorf("%d calls of /api/bootstrap in 3 reconciles, want 1: a refusal is held, not retried at once", n)
	}
}
