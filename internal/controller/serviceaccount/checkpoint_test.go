package serviceaccount

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// A ServiceAccount whose connection Secret is named like its bootstrap
// checkpoint (<name>-bootstrap-admin) without bootstrapping: the connection
// Secret holds the account's live key, and it is never taken for a
// checkpoint left behind (deleted, so that the next reconcile mints again,
// each time leaving a valid key nobody holds).
func TestAConnectionSecretNamedLikeTheCheckpointIsKept(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	cr := sa()
	cr.Spec.ForProvider.Bootstrap = nil
	cr.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: checkpointName(cr)}
	f.admin(t)
	for i := range 6 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	id := f.double.Snapshot().ServiceAccounts[0].ID
	s := f.secret(t, checkpointName(cr))
	if s == nil || keysOn(f.double, id) != 1 || !f.double.Verify(string(s.Data[SecretKeyToken])).Valid {
		t.Errorf("after 6 reconciles: connection Secret kept %v, %d valid keys on account %d; want the Secret holding the one valid key", s != nil, keysOn(f.double, id), id)
	}
}

// A ServiceAccount that would bootstrap while another object's Secret has
// its checkpoint's name: the admin key the bootstrap answers once could be
// kept nowhere. Nothing is bootstrapped; the MR says why.
func TestABootstrapWhoseCheckpointNameIsTakenDoesNotBootstrap(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	yes := true
	other := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: checkpointName(cr),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "ServiceAccount", Name: "other", UID: "uid-other", Controller: &yes}},
		},
		Data: map[string][]byte{SecretKeyToken: []byte("another-account's-key")},
	}
	if err := f.kube.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := f.reconcile(t, cr); err == nil {
			t.Fatalf("reconcile %d succeeded; want it refused", i)
		}
	}
	if n := f.double.Count("POST /api/bootstrap"); n != 0 || f.double.UserKeys() != 0 {
		t.Errorf("%d bootstraps, %d admin keys valid: want none while the checkpoint's name is another's", n, f.double.UserKeys())
	}
	if r := cr.GetCondition(xpv2.TypeReady).Reason; r != ReasonCheckpointNameTaken {
		t.Errorf("Ready reason %q, want %q", r, ReasonCheckpointNameTaken)
	}
	if got := f.secret(t, checkpointName(cr)); got == nil || string(got.Data[SecretKeyToken]) != "another-account's-key" {
		t.Errorf("the other object's Secret was changed: %v", got)
	}
}

// Another object writes a Secret of the checkpoint's name between the
// check and the checkpoint's write: the admin key just answered is held by
// nobody, so it is revoked at once, not left valid.
func TestABootstrapWhoseCheckpointIsTakenMeanwhileRevokesItsKey(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	yes := true
	f.beforeCreate = map[string]func(){checkpointName(cr): func() {
		f.beforeCreate = nil
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: checkpointName(cr),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-other", Controller: &yes}},
		}}
		if err := f.kube.Create(t.Context(), other); err != nil {
			t.Error(err)
		}
	}}
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("the reconcile succeeded; want the lost checkpoint reported")
	}
	if n := f.double.Count("POST /api/bootstrap"); n != 1 {
		t.Fatalf("setup: %d bootstraps, want 1", n)
	}
	if n := f.double.UserKeys(); n != 0 {
		t.Errorf("%d bootstrap admin key(s) valid on the server, held by no Secret", n)
	}
}

// A ServiceAccount x bootstraps; its account's create fails, so its
// checkpoint (the admin key) stays. Another ServiceAccount y of the
// namespace writes its connection Secret under x's checkpoint name
// (x-bootstrap-admin): it must not take the checkpoint over, which would
// leave the admin key valid and held by no Secret.
func TestAnotherServiceAccountCannotWriteOverACheckpoint(t *testing.T) {
	writeOverACheckpoint(t, false)
}

// As above for a checkpoint an older release wrote, with an owner reference
// only (no controller).
func TestAnotherServiceAccountCannotWriteOverAnOlderCheckpoint(t *testing.T) {
	writeOverACheckpoint(t, true)
}

func writeOverACheckpoint(t *testing.T, older bool) {
	t.Helper()
	f := newFixture(t, terdutdouble.Options{})
	x := sa()
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts", Status: http.StatusInternalServerError, Times: 1})
	if err := f.reconcile(t, x); err == nil {
		t.Fatal("setup: want the account create to fail")
	}
	cp := f.secret(t, checkpointName(x))
	if cp == nil || f.double.UserKeys() != 1 {
		t.Fatalf("setup: checkpoint %v, %d admin keys", cp != nil, f.double.UserKeys())
	}
	if older {
		cp.OwnerReferences[0].Controller = nil
		if err := f.kube.Update(t.Context(), cp); err != nil {
			t.Fatal(err)
		}
	}
	adminTok := string(cp.Data[SecretKeyToken])

	// y's provider config: an instance key of its own.
	admin, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: terdut.Secret(adminTok), MaxRetries: -1})
	acct, err := admin.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "pc", Scope: "instance"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := admin.MintKey(t.Context(), acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: k.Key, MaxRetries: -1})
	y := &v1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other", UID: "uid-y"},
		Spec: v1alpha1.ServiceAccountSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: checkpointName(x)}},
			ForProvider:         v1alpha1.ServiceAccountParameters{Name: "other", Scope: "instance"},
		},
	}
	ey := &external{pc: pc, pcAuthenticated: true, pcKeyIs: func(terdut.Secret) bool { return false }, endpoint: f.url, kube: f.kube, reader: f.e.reader, record: &controllertest.Recorder{}, now: f.e.now, withKey: f.e.withKey}
	if o, err := ey.Observe(t.Context(), y); err != nil || o.ResourceExists {
		t.Fatalf("y Observe %+v %v", o, err)
	}
	_, yerr := ey.Create(t.Context(), y)
	t.Logf("y Create: %v", yerr)

	// x goes on.
	for range 2 {
		t.Logf("x reconcile: %v", f.reconcile(t, x))
	}
	held := false
	l := &corev1.SecretList{}
	if err := f.kube.List(t.Context(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Items {
		if strings.Contains(string(s.Data[SecretKeyToken]), adminTok) {
			held = true
		}
	}
	if f.double.Verify(adminTok).Valid && !held {
		t.Errorf("the bootstrap admin key is valid on the server and held by no Secret (the checkpoint %q was taken over by ServiceAccount %q's connection Secret)", checkpointName(x), y.Name)
	}
}
