package generic

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestASecretOutsideTheCacheIsNotReadAsAbsent: the provider's cache holds
// only the Secrets it marked. An MR's connection Secret that is there but
// unmarked (written by an earlier version, or relabelled by someone) must
// not be read as absent: crossplane-runtime's publisher would create it
// again, be refused with AlreadyExists, and fail every reconcile.
func TestASecretOutsideTheCacheIsNotReadAsAbsent(t *testing.T) {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	cr := &v1alpha1.Integration{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod", UID: "uid-1"}}
	cr.SetWriteConnectionSecretToReference(&xpv2.LocalSecretReference{Name: "prod-webhook"})
	existing := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod-webhook", OwnerReferences: []metav1.OwnerReference{meta.AsController(meta.TypedReferenceTo(cr, v1alpha1.IntegrationGroupVersionKind))}},
		Data:       map[string][]byte{"url": []byte("https://terdut/hook/1")},
	}
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(cr, existing).Build()

	kube := SecretsPastTheCache(controllertest.CachedSecrets(api, LabelManagedBy, ManagedBy), api)
	pub := managed.NewAPILocalSecretPublisher(kube, s)
	for i := range 3 {
		if _, err := pub.PublishConnection(t.Context(), cr, managed.ConnectionDetails{"url": []byte("https://terdut/hook/1")}); err != nil {
			t.Fatalf("reconcile %d: publishing to a Secret that is there but not cached: %v", i+1, err)
		}
	}
	got := &corev1.Secret{}
	if err := kube.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: "prod-webhook"}, got); err != nil || string(got.Data["url"]) != "https://terdut/hook/1" {
		t.Errorf("Get of the uncached Secret = %v, url %q; want it read from the API server", err, got.Data["url"])
	}
	// An absent Secret is still absent.
	if err := kube.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: "none"}, &corev1.Secret{}); !kerrors.IsNotFound(err) {
		t.Errorf("Get of a Secret that is not there = %v, want NotFound", err)
	}
}

func TestOwnSecretMarks(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "me"}}}
	OwnSecret(s)
	if !OwnSecrets().Label.Matches(labels.Set(s.Labels)) || s.Labels["keep"] != "me" {
		t.Errorf("labels %v: want the provider's mark added, the others kept", s.Labels)
	}
}
