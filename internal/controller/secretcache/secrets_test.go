package secretcache

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kfake "k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// TestIdleSecretWatchesStop: each Secret a provider config names is read
// through a watch of its own. A watch nobody reads any more (its provider
// config deleted, or pointed at another Secret) is stopped, and a later
// read starts it again and sees the Secret as it is then.
func TestIdleSecretWatchesStop(t *testing.T) {
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "creds"}, Data: map[string][]byte{"key": []byte("one")}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "other"}, Data: map[string][]byte{"key": []byte("x")}}
	api := kfake.NewClientset(creds, other)
	now := time.Unix(0, 0)
	w := &WatchedSecrets{CoreV1: noWatchList{api.CoreV1()}, Direct: fake.NewClientBuilder().Build(), IdleAfter: 30 * time.Minute, now: func() time.Time { return now }}
	t.Cleanup(w.Stop)

	read := func(name string) string {
		t.Helper()
		got := &corev1.Secret{}
		if err := w.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: name}, got); err != nil {
			t.Fatalf("Get %s: %v", name, err)
		}
		return string(got.Data["key"])
	}
	if got := read("creds"); got != "one" {
		t.Fatalf("creds key = %q, want one", got)
	}
	now = now.Add(20 * time.Minute)
	read("other")
	if n := w.Watches(); n != 2 {
		t.Fatalf("%d watches after two Secrets read, want 2", n)
	}
	now = now.Add(20 * time.Minute) // creds unread for 40 minutes, other for 20
	read("other")
	read("other")
	now = now.Add(5 * time.Minute)
	if err := w.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: "third"}, &corev1.Secret{}); !kerrors.IsNotFound(err) {
		t.Fatalf("Get of a Secret that is not there = %v, want NotFound", err)
	}
	if n := w.Watches(); n != 2 {
		t.Errorf("%d watches after creds went unread for 45 minutes (other and third read since), want 2: creds' stopped", n)
	}

	creds.Data["key"] = []byte("two")
	if _, err := api.CoreV1().Secrets("team-a").Update(t.Context(), creds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := read("creds"); got != "two" {
		t.Errorf("creds key read after its watch was stopped = %q, want the current two", got)
	}
}

// TestSecretWatchesAreBounded: a tenant's namespaced provider configs can
// name as many Secrets as it likes; no more than MaxWatches are watched, and
// every other is still read, from the API server.
func TestSecretWatchesAreBounded(t *testing.T) {
	objs := make([]runtime.Object, 0, 5)
	secrets := make([]client.Object, 0, 5)
	for i := range 5 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: fmt.Sprintf("creds-%d", i)}, Data: map[string][]byte{"key": fmt.Append(nil, i)}}
		objs = append(objs, s)
		secrets = append(secrets, s.DeepCopy())
	}
	w := &WatchedSecrets{CoreV1: noWatchList{kfake.NewClientset(objs...).CoreV1()}, Direct: fake.NewClientBuilder().WithObjects(secrets...).Build(), MaxWatches: 3}
	t.Cleanup(w.Stop)
	for i := range 5 {
		got := &corev1.Secret{}
		if err := w.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: fmt.Sprintf("creds-%d", i)}, got); err != nil || string(got.Data["key"]) != fmt.Sprint(i) {
			t.Errorf("Get creds-%d = %v, key %q; want key %d", i, err, got.Data["key"], i)
		}
	}
	if n := w.Watches(); n != 3 {
		t.Errorf("%d watches for 5 Secrets read, want at most MaxWatches 3", n)
	}
}

// noWatchList is a fake core/v1 client that says, as its clientset does,
// that it cannot stream a list.
type noWatchList struct{ corev1client.CoreV1Interface }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// TestOneNamespaceCannotHoldEverySecretWatch: a tenant's namespace naming
// many Secrets gets at most MaxWatchesPerNamespace watches (the rest are
// read from the API server, still correct), so another namespace's Secret
// still gets one; and a watch keeps a Secret's data, not its annotations
// (kubectl's last-applied copy of the data) or labels.
func TestOneNamespaceCannotHoldEverySecretWatch(t *testing.T) {
	var objs []runtime.Object
	var secrets []client.Object
	add := func(ns, name, key string) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"key":"` + key + `"}}`}},
			Data:       map[string][]byte{"key": []byte(key)},
		}
		objs, secrets = append(objs, s), append(secrets, s.DeepCopy())
	}
	for i := range 5 {
		add("tenant", fmt.Sprintf("creds-%d", i), fmt.Sprint(i))
	}
	add("platform", "creds", "platform")
	w := &WatchedSecrets{CoreV1: noWatchList{kfake.NewClientset(objs...).CoreV1()}, Direct: fake.NewClientBuilder().WithObjects(secrets...).Build(), MaxWatches: 4, MaxWatchesPerNamespace: 2}
	t.Cleanup(w.Stop)
	for i := range 5 {
		got := &corev1.Secret{}
		if err := w.Get(t.Context(), types.NamespacedName{Namespace: "tenant", Name: fmt.Sprintf("creds-%d", i)}, got); err != nil || string(got.Data["key"]) != fmt.Sprint(i) {
			t.Errorf("Get tenant/creds-%d = %v, key %q; want key %d", i, err, got.Data["key"], i)
		}
	}
	if n := w.Watches(); n != 2 {
		t.Errorf("%d watches for the tenant's 5 Secrets, want its 2", n)
	}
	got := &corev1.Secret{}
	if err := w.Get(t.Context(), types.NamespacedName{Namespace: "platform", Name: "creds"}, got); err != nil || string(got.Data["key"]) != "platform" {
		t.Errorf("Get platform/creds = %v, key %q", err, got.Data["key"])
	}
	if n := w.Watches(); n != 3 {
		t.Errorf("%d watches after the platform's Secret, want 3: one namespace must not hold every slot", n)
	}
	// Read once more: from its watch now.
	if err := w.Get(t.Context(), types.NamespacedName{Namespace: "platform", Name: "creds"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Annotations) != 0 || len(got.Labels) != 0 || string(got.Data["key"]) != "platform" {
		t.Errorf("a watched Secret keeps annotations %v and labels %v; want its data only", got.Annotations, got.Labels)
	}
}

// TestAWatchKeepsOnlyTheKeyItReads: a provider config reads one key of its
// Secret; the watch that serves it keeps that key only, so a tenant's large
// Secret costs the provider its one key, not its whole data.
func TestAWatchKeepsOnlyTheKeyItReads(t *testing.T) {
	big := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "creds"}, Data: map[string][]byte{
		"token": []byte("tdk_tenant"), "padding": make([]byte, 1<<20),
	}}
	w := &WatchedSecrets{CoreV1: noWatchList{kfake.NewClientset(big).CoreV1()}, Direct: fake.NewClientBuilder().WithObjects(big.DeepCopy()).Build()}
	t.Cleanup(w.Stop)
	key := types.NamespacedName{Namespace: "tenant", Name: "creds"}
	for range 2 { // the second read is served by the watch
		got, err := w.GetKey(t.Context(), key, "token")
		if err != nil || string(got) != "tdk_tenant" {
			t.Fatalf("GetKey = %q, %v; want the token", got, err)
		}
	}
	sw := w.watches[watchKey{NamespacedName: key, data: "token"}]
	if sw == nil {
		t.Fatal("no watch of the Secret's token")
	}
	item, ok, err := sw.inf.GetStore().GetByKey("tenant/creds")
	if err != nil || !ok {
		t.Fatalf("the watch holds no Secret: %v", err)
	}
	if s := item.(*corev1.Secret); len(s.Data) != 1 || len(s.Data["padding"]) != 0 {
		t.Errorf("the watch keeps %d keys of the Secret (padding %d bytes), want the token only", len(s.Data), len(s.Data["padding"]))
	}
}
