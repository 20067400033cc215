package adjust

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// TestNoEmptyConnectionSecretBeforeCreate: crossplane-runtime's reconciler
// created an Integration's connection Secret empty before Create (it
// publishes Observe's details, none yet), and Create then wrote it twice
// more. What a user notices must not change: once created, the Secret holds
// what Create published, and a Secret another object controls is still
// refused before anything is made.
func TestNoEmptyConnectionSecretBeforeCreate(t *testing.T) {
	s := controllertest.Scheme(t)
	key := types.NamespacedName{Namespace: "team-a", Name: "am"}
	newCR := func() *v1alpha1.Integration {
		cr := &v1alpha1.Integration{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "u1"}}
		cr.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "am-webhook"}
		return cr
	}
	secretKey := types.NamespacedName{Namespace: key.Namespace, Name: "am-webhook"}

	t.Run("created by Create, not before", func(t *testing.T) {
		cr := newCR()
		secretCreates := 0
		kube := fake.NewClientBuilder().WithScheme(controllertest.Scheme(t)).WithObjects(cr).WithStatusSubresource(cr).WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
				if _, ok := o.(*corev1.Secret); ok {
					secretCreates++
				}
				return c.Create(ctx, o, opts...)
			},
		}).Build()
		existedBeforeCreate := true
		connect := controllertest.ConnectTo(controllertest.CreatingServer(func(ctx context.Context, _ *v1alpha1.Integration) (managed.ExternalCreation, error) {
			err := kube.Get(ctx, secretKey, &corev1.Secret{})
			existedBeforeCreate = !kerrors.IsNotFound(err)
			return managed.ExternalCreation{ConnectionDetails: managed.ConnectionDetails{"url": []byte("u"), "key": []byte("k")}}, nil
		}))
		r := controllertest.NewManagedReconciler[*v1alpha1.Integration](NothingToPublish(controllertest.FakeManager(kube, s)), v1alpha1.IntegrationGroupVersionKind, connect)
		if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		if existedBeforeCreate {
			t.Error("the connection Secret existed before Create: the reconciler made it empty")
		}
		got := &corev1.Secret{}
		if err := kube.Get(t.Context(), secretKey, got); err != nil {
			t.Fatalf("after Create: %v", err)
		}
		if len(got.Data["url"]) == 0 || len(got.Data["key"]) == 0 || secretCreates != 1 {
			t.Errorf("after Create the Secret holds %d keys (url %t, key %t), created %d times; want url and key, once",
				len(got.Data), len(got.Data["url"]) > 0, len(got.Data["key"]) > 0, secretCreates)
		}
	})

	t.Run("another object's Secret is refused before Create", func(t *testing.T) {
		cr := newCR()
		foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name}, Data: map[string][]byte{"x": []byte("y")}}
		kube := fake.NewClientBuilder().WithScheme(controllertest.Scheme(t)).WithObjects(cr, foreign).WithStatusSubresource(cr).Build()
		created := false
		connect := controllertest.ConnectTo(controllertest.CreatingServer(func(context.Context, *v1alpha1.Integration) (managed.ExternalCreation, error) {
			created = true
			return managed.ExternalCreation{}, nil
		}))
		r := controllertest.NewManagedReconciler[*v1alpha1.Integration](NothingToPublish(controllertest.FakeManager(kube, s)), v1alpha1.IntegrationGroupVersionKind, connect)
		_, _ = r.Reconcile(t.Context(), reconcile.Request{NamespacedName: key})
		if created {
			t.Error("Create ran although the connection Secret is another object's")
		}
		got := &v1alpha1.Integration{}
		if err := kube.Get(t.Context(), key, got); err != nil {
			t.Fatal(err)
		}
		if c := got.GetCondition(xpv2.TypeSynced); c.Status != corev1.ConditionFalse {
			t.Errorf("Synced %s %q, want False with the refusal", c.Status, c.Message)
		}
	})
}
