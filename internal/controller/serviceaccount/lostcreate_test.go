package serviceaccount

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// deleteUntilGone reconciles stored being deleted until Observe finds
// nothing of its own (at most n times). Each reconcile starts from a copy of
// stored: the runtime keeps nothing Observe sets while an MR is deleted.
func (f *fixture) deleteUntilGone(t *testing.T, stored *v1alpha1.ServiceAccount, n int) {
	t.Helper()
	if !meta.WasDeleted(stored) {
		now := metav1.Now()
		stored.SetDeletionTimestamp(&now)
	}
	for range n {
		if err := f.delete(t, stored.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if o, err := f.e.Observe(t.Context(), stored.DeepCopy()); err == nil && !o.ResourceExists {
			return
		}
	}
	t.Fatal("the ServiceAccount did not let go")
}

// A ServiceAccount's Create made the account and wrote a key minted on it to
// its connection Secret, and the provider died before the account's ID was
// recorded. Deleting the MR deletes that account, and so its key: a working
// instance key must not outlive the resource that held it.
func TestDeletingAfterAnInterruptedCreateDeletesTheAccountAndItsKey(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	if err := f.reconcile(t, cr); err != nil {
		t.Fatal(err)
	}
	key := terdut.Secret(f.secret(t, "instance-credentials").Data[SecretKeyToken])
	meta.RemoveAnnotations(cr, meta.AnnotationKeyExternalName) // the ID never recorded
	f.deleteUntilGone(t, cr, 5)
	if n := len(f.double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("%d service accounts left after deleting the MR whose Create made one", n)
	}
	c, _ := terdut.New(terdut.Options{Endpoint: f.url, Token: key, MaxRetries: -1})
	if _, err := c.ListUsers(t.Context()); !terdut.IsUnauthorized(err) {
		t.Errorf("the key the interrupted Create wrote still works after deleting its MR: %v", err)
	}
}

// A ServiceAccount that never created anything and whose
// writeConnectionSecretToRef names another ServiceAccount's Secret (a
// copy-paste) is deleted: the account that Secret names is the other MR's and
// stays.
func TestDeletingAnMRThatMadeNothingLeavesTheAccountOfTheSecretItNames(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	holder := sa()
	if err := f.reconcile(t, holder); err != nil {
		t.Fatal(err)
	}
	copied := sa()
	copied.Name, copied.UID = "copy", "uid-copy"
	now := metav1.Now()
	copied.SetDeletionTimestamp(&now)
	f.deleteUntilGone(t, copied, 5)
	if n := len(f.double.Snapshot().ServiceAccounts); n != 1 {
		t.Errorf("%d service accounts left: want the other ServiceAccount's account kept", n)
	}
}

// A bootstrap was interrupted after /api/bootstrap answered (its admin key
// checkpointed in a Secret) and before the account was made; the MR is then
// deleted. The checkpoint goes and its admin key is revoked: no admin key is
// left in a Secret nobody manages.
func TestDeletingAfterAnInterruptedBootstrapRemovesItsCheckpoint(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts", Status: http.StatusInternalServerError, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("setup: want the account's create to fail after the bootstrap")
	}
	if f.secret(t, checkpointName(cr)) == nil {
		t.Fatal("setup: no bootstrap checkpoint was left")
	}
	f.deleteUntilGone(t, cr, 5)
	if f.secret(t, checkpointName(cr)) != nil {
		t.Error("the bootstrap checkpoint (an admin key) is left behind")
	}
	if n := f.double.UserKeys(); n != 0 {
		t.Errorf("%d user keys valid on the server after deleting the MR: the checkpointed admin key must be revoked", n)
	}
}

// A rotation's mint commits on the server and its answer is lost: a key
// nobody holds. The next mint looks for it in the account's keys, but that
// list answers empty (a lagging replica, a page cut short). The mint waits, reads again, and revokes
// it: one list's silence does not let the next mint forget a valid key.
func TestAStrayKeyAListOmitsIsRevokedAllTheSame(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	f.e.absence = extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	f.e.absence.Clock = func() time.Time { return f.now }
	cr := sa()
	cr.Spec.ForProvider.KeyRotation = &v1alpha1.KeyRotation{}
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	cr.Spec.ForProvider.KeyRotation.RotationRequest = "2026-12-07"
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts/{id}/keys", Commit: true, Status: http.StatusGatewayTimeout, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("setup: the rotation whose answer was lost succeeded")
	}
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/service-accounts/{id}/keys", Status: http.StatusOK, Body: "[]", Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Error("a mint went ahead on one list of the account's keys that showed none")
	}
	f.now = f.now.Add(extclient.DefaultAbsenceConfirmation + time.Second)
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	id := f.double.Snapshot().ServiceAccounts[0].ID
	valid := keysOn(f.double, id)
	if held := f.secret(t, "instance-credentials").Data[SecretKeyToken]; valid != 1 || !f.double.Verify(string(held)).Valid {
		t.Errorf("%d valid keys on the account, want 1: the Secret's (a key the lost mint made is left valid, held by nobody)", valid)
	}
}

// The first Create made the account and its mint committed a key on the
// server, but the answer was lost (504 after commit, or a kill right after
// the POST): the Secret holds only the mark of the mint under way, which
// names the account. Deleting the MR does not leave the account with a
// valid instance key nobody holds.
func TestDeletingAfterALostFirstMintDeletesTheAccountAndItsKey(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts/{id}/keys", Commit: true, Status: http.StatusGatewayTimeout, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("setup: the mint whose answer was lost succeeded")
	}
	if s := f.secret(t, "instance-credentials"); s == nil || s.Annotations[AnnotationMinting] == "" {
		t.Fatalf("setup: want the Secret with the minting mark, got %v", s)
	}
	f.deleteUntilGone(t, cr, 5)
	st := f.double.Snapshot()
	valid := 0
	for _, k := range f.double.Keys() {
		if k.Valid && k.AccountID != 0 {
			valid++
		}
	}
	if len(st.ServiceAccounts) != 0 || valid != 0 {
		t.Errorf("after deleting the MR: %d service accounts, %d valid account keys left (scope instance): the lost mint's key outlives its MR", len(st.ServiceAccounts), valid)
	}
}

// An MR that never made anything (no external name) is deleted. A Secret
// named like its bootstrap checkpoint that is not its own (another MR's
// connection Secret, controlled by that MR) is left alone.
func TestDeletingLeavesASecretNamedLikeItsCheckpointThatIsNotItsOwn(t *testing.T) {
	f := newFixture(t, terdutdouble.Options{})
	cr := sa()
	cr.Name, cr.UID = "am", "uid-am"
	yes := true
	other := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "am-bootstrap-admin",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "terdut.ryuvia.com/v1alpha1", Kind: "ServiceAccount", Name: "other", UID: "uid-other", Controller: &yes}},
		},
		Data: map[string][]byte{SecretKeyToken: []byte("tdk_other_live_key"), SecretKeyEndpoint: []byte(f.url)},
	}
	if err := f.kube.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	f.deleteUntilGone(t, cr, 5)
	if f.secret(t, "am-bootstrap-admin") == nil {
		t.Error("deleting an MR that made nothing deleted Secret am-bootstrap-admin, which another ServiceAccount controls (its live key)")
	}
}

// A rotation mints a new key but cannot revoke the old one yet (the server
// answers 500); before that revocation is retried, another rotation is
// requested. The first old key is revoked all the same: it is not forgotten
// when the second rotation notes the key it replaces.
func TestASecondRotationRevokesTheKeyTheFirstCouldNot(t *testing.T) {
	f, cr := rotating(t)
	cr.Spec.ForProvider.KeyRotation.RotationRequest = "first"
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodDelete, Route: "/api/service-accounts/{id}/keys/{kid}", Status: http.StatusInternalServerError, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("setup: the first rotation's revocation did not fail")
	}
	cr.Spec.ForProvider.KeyRotation.RotationRequest = "second"
	for range 3 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	id := f.double.Snapshot().ServiceAccounts[0].ID
	valid := keysOn(f.double, id)
	if held := f.secret(t, "instance-credentials").Data[SecretKeyToken]; valid != 1 || !f.double.Verify(string(held)).Valid {
		t.Errorf("%d valid keys on the account after two rotations, want 1: the Secret's (a key the first rotation replaced is left valid)", valid)
	}
}

// The MR's account is deleted outside Kubernetes and made again (the CR
// wins); the key mint on the new account commits and its answer is lost.
// The external name still names the old account; the MR's Secret names the
// new one as the account a mint was under way on. Deleting the MR deletes
// the new account and so its key, which nobody holds.
func TestDeletingAfterALostRecreateMintDeletesTheAccountAndItsKey(t *testing.T) {
	f, cr, _, first := anAccountDeletedOutside(t)
	f.double.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/service-accounts/{id}/keys", Commit: true, Status: http.StatusGatewayTimeout, Times: 1})
	if err := f.reconcile(t, cr); err == nil {
		t.Fatal("setup: the re-create's mint answer was not lost")
	}
	st := f.double.Snapshot()
	if len(st.ServiceAccounts) != 1 || st.ServiceAccounts[0].ID == first {
		t.Fatalf("setup: accounts %+v; want only the re-created one", st.ServiceAccounts)
	}
	second := st.ServiceAccounts[0].ID
	f.deleteUntilGone(t, cr, 5)
	if n := len(f.double.Snapshot().ServiceAccounts); n != 0 || keysOn(f.double, second) != 0 {
		t.Errorf("after deleting the MR: %d service account(s), %d valid key(s) on the re-created account %d left, held by nobody", n, keysOn(f.double, second), second)
	}
}

// The MR's Secret names an account this MR recorded once and that is gone;
// another account of the same name, made by hand since, is not the MR's:
// deleting the MR leaves it (and its keys).
func TestDeletingLeavesAHandMadeAccountOfItsNameWhenItsOwnIsGone(t *testing.T) {
	f, cr, pc, _ := anAccountDeletedOutside(t)
	hand, err := pc.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: cr.Spec.ForProvider.Name, Scope: cr.Spec.ForProvider.Scope})
	if err != nil {
		t.Fatal(err)
	}
	f.deleteUntilGone(t, cr, 5)
	if st := f.double.Snapshot(); len(st.ServiceAccounts) != 1 || st.ServiceAccounts[0].ID != hand.ID {
		t.Errorf("accounts left %+v; want the hand-made %d", st.ServiceAccounts, hand.ID)
	}
}

// anAccountDeletedOutside is an MR whose account was made and recorded
// (through the provider config's admin key, pc), then deleted outside
// Kubernetes (first, its ID).
func anAccountDeletedOutside(t *testing.T) (*fixture, *v1alpha1.ServiceAccount, *terdut.Client, int64) {
	t.Helper()
	f := newFixture(t, terdutdouble.Options{AdminKey: adminKey})
	cr := sa()
	cr.Spec.ForProvider.Bootstrap = nil
	pc := f.admin(t)
	for range 2 {
		if err := f.reconcile(t, cr); err != nil {
			t.Fatal(err)
		}
	}
	first := f.double.Snapshot().ServiceAccounts[0].ID
	if err := pc.DeleteServiceAccount(t.Context(), first); err != nil { // outside Kubernetes
		t.Fatal(err)
	}
	return f, cr, pc, first
}
