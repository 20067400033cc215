package serviceaccount

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

const ns = "crossplane-system"

func sa() *v1alpha1.ServiceAccount {
	return &v1alpha1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "terdut-operator", UID: "uid-sa"},
		Spec: v1alpha1.ServiceAccountSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: "instance-credentials"}},
			ForProvider:         v1alpha1.ServiceAccountParameters{Name: "terdut-operator", Scope: "instance", Bootstrap: &v1alpha1.Bootstrap{Username: "admin"}},
		},
	}
}

// fixture is a fresh (unbootstrapped) double and an external client whose
// provider config has no key yet, as when it names the Secret it produces.
type fixture struct {
	double *terdutdouble.Server
	url    string
	kube   client.Client
	e      *external
	now    time.Time
	// fail makes the next kube call of that verb on that Secret fail once.
	fail map[string]string
	// lag makes the cached client serve each Secret as it was before its
	// last write, as an informer does until the watch event arrives.
	lag   bool
	stale map[string]*corev1.Secret
	// beforeCreate runs before the kube create of a Secret of its name.
	beforeCreate map[string]func()
}

func newFixture(t *testing.T, o terdutdouble.Options) *fixture {
	t.Helper()
	f := &fixture{double: terdutdouble.New(o), now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), fail: map[string]string{}, stale: map[string]*corev1.Secret{}}
	hs := httptest.NewServer(f.double.Handler())
	t.Cleanup(hs.Close)
	f.url = hs.URL
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	failing := func(verb string, obj client.Object) error {
		if f.fail[verb] == obj.GetName() {
			delete(f.fail, verb)
			return errors.New("injected kube failure: " + verb + " " + obj.GetName())
		}
		return nil
	}
	store := fake.NewClientBuilder().WithScheme(s).Build()
	remember := func(ctx context.Context, obj client.Object) {
		if cur := (&corev1.Secret{}); f.lag && store.Get(ctx, client.ObjectKeyFromObject(obj), cur) == nil {
			f.stale[obj.GetName()] = cur
		}
	}
	f.kube = interceptor.NewClient(store, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if old, ok := f.stale[key.Name]; ok && f.lag {
				old.DeepCopyInto(obj.(*corev1.Secret))
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := failing("create", obj); err != nil {
				return err
			}
			if h := f.beforeCreate[obj.GetName()]; h != nil {
				h()
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := failing("update", obj); err != nil {
				return err
			}
			remember(ctx, obj)
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := failing("delete", obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	pc, _ := terdut.New(terdut.Options{Endpoint: f.url, MaxRetries: -1})
	f.e = &external{pc: pc, endpoint: f.url, kube: f.kube, reader: store, record: &controllertest.Recorder{}, now: func() time.Time { return f.now }}
	f.e.withKey = func(_ string, tok terdut.Secret) (api, error) {
		return terdut.New(terdut.Options{Endpoint: f.url, Token: tok, MaxRetries: -1})
	}
	return f
}

// reconcile runs one managed reconcile's external calls.
func (f *fixture) reconcile(t *testing.T, cr *v1alpha1.ServiceAccount) error {
	t.Helper()
	f.e.observed = nil
	o, err := f.e.Observe(t.Context(), cr)
	if err != nil {
		return err
	}
	switch {
	case !o.ResourceExists:
		_, err = f.e.Create(t.Context(), cr)
	case !o.ResourceUpToDate:
		_, err = f.e.Update(t.Context(), cr)
	}
	return err
}

// delete is a reconcile of cr being deleted: Observe, then Delete when
// Observe finds something of cr's.
func (f *fixture) delete(t *testing.T, cr *v1alpha1.ServiceAccount) error {
	t.Helper()
	if !meta.WasDeleted(cr) {
		now := metav1.Now()
		cr.SetDeletionTimestamp(&now)
	}
	f.e.observed = nil
	o, err := f.e.Observe(t.Context(), cr)
	if err != nil || !o.ResourceExists {
		return err
	}
	_, err = f.e.Delete(t.Context(), cr)
	return err
}

func (f *fixture) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := f.kube.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		return nil
	}
	return s
}

// converged checks the end state: one account, a working key in the
// connection Secret, no checkpoint, the admin key it held revoked, and a
// single /api/bootstrap.
func (f *fixture) converged(t *testing.T, cr *v1alpha1.ServiceAccount) {
	t.Helper()
	if n := f.double.Count("POST /api/bootstrap"); n != 1 {
		t.Errorf("%d calls of /api/bootstrap, want 1", n)
	}
	st := f.double.Snapshot()
	if len(st.ServiceAccounts) != 1 {
		t.Fatalf("%d service accounts, want 1", len(st.ServiceAccounts))
	}
	if meta.GetExternalName(cr) != extclient.FormatID(st.ServiceAccounts[0].ID) {
		t.Errorf("external-name %q, want the account ID %d", meta.GetExternalName(cr), st.ServiceAccounts[0].ID)
	}
	s := f.secret(t, "instance-credentials")
	if s == nil || len(s.Data[SecretKeyToken]) == 0 || string(s.Data[SecretKeyEndpoint]) != f.url {
		t.Fatalf("connection Secret = %v, want token and endpoint", s)
	}
	c, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: terdut.Secret(s.Data[SecretKeyToken])})
	if _, err := c.CreateTeam(t.Context(), "works-"+time.Now().Format("150405.000000")); err != nil {
		t.Errorf("the key in the Secret cannot manage teams: %v", err)
	}
	if f.secret(t, checkpointName(cr)) != nil {
		t.Error("the bootstrap checkpoint (an admin key) is left behind")
	}
	if n := f.double.UserKeys(); n != 0 {
		t.Errorf("%d user keys valid on the server: the bootstrap admin's key must be revoked once the account's own key is written", n)
	}
}

func TestBootstrapResumesAtEveryInterruption(t *testing.T) {
	cases := map[string]struct {
		reason string
		inject func(f *fixture)
		rounds int
	}{
		"Uninterrupted": {reason: "A fresh server is bootstrapped in one Create.", rounds: 1},
		"AfterTheBootstrapCall": {
			reason: "The checkpoint write fails once right after /api/bootstrap: it is retried at once, so the admin key is not lost.",
			inject: func(f *fixture) { f.fail["create"] = "terdut-operator" + checkpointSuffix },
			rounds: 1,
		},
		"AfterTheCheckpoint": {
			reason: "Creating the account fails: the next reconcile uses the checkpoint, no second bootstrap.",
			inject: func(f *fixture) {
				f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts", Status: http.StatusInternalServerError, Times: 1})
			},
			rounds: 2,
		},
		"AfterAccountCreate": {
			reason: "Minting the key fails after the account exists: the next reconcile adopts the account, no duplicate.",
			inject: func(f *fixture) {
				f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts/{id}/keys", Status: http.StatusInternalServerError, Times: 1})
			},
			rounds: 2,
		},
		"AfterKeyMint": {
			reason: "Writing the connection Secret fails after a key was minted: the next reconcile mints again (the first key is inert).",
			inject: func(f *fixture) { f.fail["create"] = "instance-credentials" },
			rounds: 2,
		},
		"AfterTheSecretWrite": {
			reason: "Deleting the checkpoint fails after the Secret is written: the next reconcile reuses the working key and deletes the checkpoint.",
			inject: func(f *fixture) { f.fail["delete"] = "terdut-operator" + checkpointSuffix },
			rounds: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, terdutdouble.Options{})
			if tc.inject != nil {
				tc.inject(f)
			}
			cr := sa()
			var errs []error
			for range tc.rounds + 1 {
				if err := f.reconcile(t, cr); err != nil {
					errs = append(errs, err)
				}
			}
			if len(errs) != tc.rounds-1 {
				t.Errorf("\n%s\nerrors %v, want %d", tc.reason, errs, tc.rounds-1)
			}
			f.converged(t, cr)
			if tc.reason != "" && name == "AfterTheSecretWrite" && f.double.Count("POST /api/service-accounts/{id}/keys") != 1 {
				t.Errorf("\n%s\n%d keys minted, want 1 (the written one reused)", tc.reason, f.double.Count("POST /api/service-accounts/{id}/keys"))
			}
		})
	}
}

func TestBootstrapStateLost(t *testing.T) {
	// Someone else bootstrapped the server; we hold no key and no checkpoint.
	f := newFixture(t, terdutdouble.Options{AdminKey: "tdk_someone_else"})
	cr := sa()
	err := f.reconcile(t, cr)
	if err == nil {
		t.Fatal("reconcile against a bootstrapped server without credentials: nil error")
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != ReasonBootstrapStateLost || c.Status != corev1.ConditionFalse {
		t.Errorf("Ready = %s %s, want False %s", c.Status, c.Reason, ReasonBootstrapStateLost)
	}
	if n := len(f.double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("%d accounts created while fail-closed", n)
	}
}

func TestRotation(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	cr.Spec.ForProvider.KeyRotation = &v1alpha1.KeyRotation{Interval: &metav1.Duration{Duration: time.Hour}}
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	old := f.secret(t, "instance-credentials")
	oldKey := terdut.Secret(old.Data[SecretKeyToken])
	if cr.Status.AtProvider.NextRotationAt == nil || !cr.Status.AtProvider.NextRotationAt.Time.Equal(f.now.Add(time.Hour)) {
		t.Errorf("nextRotationAt = %v, want %v", cr.Status.AtProvider.NextRotationAt, f.now.Add(time.Hour))
	}

	cases := []struct {
		reason string
		change func()
	}{
		{reason: "The interval passed: a new key is minted, written in place, and the old one revoked.", change: func() { f.now = f.now.Add(61 * time.Minute) }},
		{reason: "A new rotationRequest rotates at once.", change: func() { cr.Spec.ForProvider.KeyRotation.RotationRequest = "2026-12-02" }},
	}
	for _, tc := range cases {
		tc.change()
		for range 2 {
			if err := f.reconcile(t, cr); err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
		}
		s := f.secret(t, "instance-credentials")
		newKey := terdut.Secret(s.Data[SecretKeyToken])
		if newKey == oldKey || s.Annotations[AnnotationRevokeKeyID] != "" {
			t.Errorf("%s\nkey changed %v, revoke pending %q", tc.reason, newKey != oldKey, s.Annotations[AnnotationRevokeKeyID])
		}
		oc, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: oldKey, MaxRetries: -1})
		if _, err := oc.ListUsers(t.Context()); !terdut.IsUnauthorized(err) {
			t.Errorf("%s\nthe old key still works: %v", tc.reason, err)
		}
		nc, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: newKey})
		if _, err := nc.ListUsers(t.Context()); err != nil {
			t.Errorf("%s\nthe new key does not work: %v", tc.reason, err)
		}
		if n := len(f.double.Snapshot().ServiceAccounts); n != 1 {
			t.Errorf("%s\n%d accounts, want the same one", tc.reason, n)
		}
		oldKey = newKey
	}
	if o, err := f.e.Observe(t.Context(), cr); err != nil || !o.ResourceUpToDate {
		t.Errorf("after rotating: %+v, %v; want up to date", o, err)
	}
}

// TestRotationWithLaggingCache rotates while the cached client still serves
// the connection Secret as it was before each write: one key is minted, the
// old one revoked, and no reconcile fails (a stale read would mint twice or
// conflict on the revocation's write).
func TestRotationWithLaggingCache(t *testing.T) {
	f, cr := rotating(t)
	oldKey := f.secret(t, "instance-credentials").Data[SecretKeyToken]
	mints := f.double.Count("POST /api/service-accounts/{id}/keys")
	f.lag = true
	cr.Spec.ForProvider.KeyRotation.RotationRequest = "rotate-1"
	for i := range 3 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatalf("reconcile %d of the rotation failed: %v", i+1, err)
		}
	}
	f.lag = false
	if n := f.double.Count("POST /api/service-accounts/{id}/keys") - mints; n != 1 {
		t.Errorf("%d keys minted for one rotation request, want 1", n)
	}
	s := f.secret(t, "instance-credentials")
	if bytes.Equal(s.Data[SecretKeyToken], oldKey) || s.Annotations[AnnotationRevokeKeyID] != "" {
		t.Errorf("key changed %v, revoke pending %q; want a new key and nothing to revoke", !bytes.Equal(s.Data[SecretKeyToken], oldKey), s.Annotations[AnnotationRevokeKeyID])
	}
}

func TestNoCredentialIsAnError(t *testing.T) {
	// A team-scoped account (it cannot use its own key to manage accounts)
	// whose provider config has no key and no checkpoint: every call must
	// say so, never silently do nothing.
	f := newFixture(t, terdutdouble.Options{AdminKey: "tdk_someone_else"})
	cr := sa()
	cr.Spec.ForProvider.Scope, cr.Spec.ForProvider.Bootstrap = "team", nil
	meta.SetExternalName(cr, "7")
	want := errors.Errorf(errNoCredential, "terdut-operator").Error()
	if _, err := f.e.Observe(t.Context(), cr); err == nil || err.Error() != want {
		t.Errorf("Observe: %v, want %q", err, want)
	}
	if _, err := f.e.Update(t.Context(), cr); err == nil || err.Error() != want {
		t.Errorf("Update: %v, want %q", err, want)
	}
	if _, err := f.e.Delete(t.Context(), cr); err == nil || err.Error() != want {
		t.Errorf("Delete: %v, want %q", err, want)
	}
}

// TestAdoptAfterConflictChecksOwnership: the lookup by name misses, the POST
// answers 409, and the account found then is one another MR manages: it must
// be refused like any adoption (ResourceNotOwned), with no key minted on it.
func TestAdoptAfterConflictChecksOwnership(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{AdminKey: "tdk_admin"})
	admin, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: "tdk_admin", MaxRetries: -1})
	theirs, err := admin.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: "terdut-operator", Scope: "instance"})
	if err != nil {
		t.Fatal(err)
	}
	f.e.pc, f.e.pcAuthenticated = admin, true
	refused := errors.New("service account managed by another MR")
	f.e.adopter = extclient.Adopter{Check: func(_ context.Context, id int64) error {
		if id == theirs.ID {
			return refused
		}
		return nil
	}}
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/service-accounts", Status: http.StatusOK, Body: "[]", Times: 1})
	cr := sa()
	cr.Spec.ForProvider.Bootstrap = nil
	if _, err := f.e.Create(t.Context(), cr); !errors.Is(err, refused) {
		t.Errorf("Create after a 409 for another MR's account: %v, want the ownership refusal", err)
	}
	if n := f.double.Count("POST /api/service-accounts/{id}/keys"); n != 0 || meta.GetExternalName(cr) != "" {
		t.Errorf("%d keys minted, external-name %q: the other MR's account was adopted", n, meta.GetExternalName(cr))
	}
}

// TestAKeyWhoseAnswerWasLostIsRevoked: the server makes a rotation's key and
// its answer is lost (a 504 after the commit, as a kill right after the
// POST): the next mint revokes it, and the account ends with one valid key,
// the one its Secret holds.
func TestAKeyWhoseAnswerWasLostIsRevoked(t *testing.T) {
	f, cr := rotating(t)
	cr.Spec.ForProvider.KeyRotation.RotationRequest = "2026-12-07"
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts/{id}/keys", Commit: true, Status: http.StatusGatewayTimeout, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("the rotation whose answer was lost succeeded")
	}
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	id := f.double.Snapshot().ServiceAccounts[0].ID
	held := f.secret(t, "instance-credentials").Data[SecretKeyToken]
	valid := keysOn(f.double, id)
	if valid != 1 || !f.double.Verify(string(held)).Valid {
		t.Errorf("%d valid keys on the account (the Secret's valid: %t), want 1: the Secret's", valid, f.double.Verify(string(held)).Valid)
	}
}

// rotating is a bootstrapped ServiceAccount with keyRotation set, its
// account and first key made.
func rotating(t *testing.T) (*fixture, *v1alpha1.ServiceAccount) {
	t.Helper()
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	cr.Spec.ForProvider.KeyRotation = &v1alpha1.KeyRotation{}
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	return f, cr
}
