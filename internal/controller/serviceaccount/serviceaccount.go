// Package serviceaccount manages terdut service accounts and their keys as
// ServiceAccount managed resources, including the self-registration of a
// fresh server (bootstrap, seed §6.1) and key rotation (§6.6).
package serviceaccount

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

// ReasonBootstrapStateLost: the server is bootstrapped, and neither a
// credential nor the checkpoint of the admin key is left. Fail-closed.
const ReasonBootstrapStateLost xpv2.ConditionReason = "BootstrapStateLost"

// Keys and annotations of the connection Secret and the checkpoint.
const (
	SecretKeyToken    = v1alpha1.ServiceAccountSecretKeyToken
	SecretKeyEndpoint = v1alpha1.ServiceAccountSecretKeyEndpoint

	AnnotationAccountID    = "terdut.ryuvia.com/account-id"
	AnnotationKeyID        = "terdut.ryuvia.com/key-id"
	AnnotationMintedAt     = "terdut.ryuvia.com/key-minted-at"
	AnnotationRequest      = "terdut.ryuvia.com/rotation-request"
	AnnotationRevokeKeyID  = "terdut.ryuvia.com/revoke-key-id"
	checkpointSuffix       = "-bootstrap-admin"
	checkpointWriteRetries = 3
)

const (
	errHealthz         = "waiting for terdut-server to answer /healthz before bootstrapping it"
	errBootstrap       = "cannot bootstrap terdut-server"
	errCheckpoint      = "cannot checkpoint the bootstrap admin key; it is lost"
	errStateLost       = "terdut-server is already bootstrapped (403), and neither a usable credential nor the checkpoint Secret %q is left. Fail-closed: nothing was changed. Recover by recreating the server (a fresh install), or give the provider config a valid instance key."
	errNoCredential    = "no credential to manage service account %q: the provider config's key is missing and bootstrap is not set"
	errLookup          = "cannot look up service account"
	errCreate          = "cannot create service account"
	errConflictGone    = "the server answered 409 for service account %q, but no account of that name can be found"
	errMint            = "cannot mint a key"
	errRevoke          = "cannot revoke the old key %d"
	errDelete          = "cannot delete service account"
	errSecret          = "cannot read or write Secret %q"
	errNoTeam          = "spec.forProvider.teamId is not resolved yet"
	errDeleteCheckpt   = "cannot delete the bootstrap checkpoint Secret %q"
	reasonRotated      = "RotatedKey"
	reasonBootstrapped = "Bootstrapped"
)

// api is the part of terdut-server's API a ServiceAccount needs.
type api interface {
	Healthz(ctx context.Context) error
	Bootstrap(ctx context.Context, r terdut.BootstrapRequest) (*terdut.BootstrapResponse, error)
	ListUsers(ctx context.Context) ([]terdut.User, error)
	GetServiceAccountByName(ctx context.Context, name string) (*terdut.ServiceAccount, error)
	CreateServiceAccount(ctx context.Context, sa terdut.ServiceAccount) (*terdut.ServiceAccount, error)
	MintKey(ctx context.Context, accountID int64) (*terdut.APIKey, error)
	RevokeKey(ctx context.Context, accountID, keyID int64) error
	DeleteServiceAccount(ctx context.Context, accountID int64) error
}

var _ api = (*terdut.Client)(nil)

// Setup adds the ServiceAccount controller to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	return generic.SetupGated(mgr, o, generic.Kind[*v1alpha1.ServiceAccount]{
		GroupKind: v1alpha1.ServiceAccountGroupKind,
		GVK:       v1alpha1.ServiceAccountGroupVersionKind,
		Object:    &v1alpha1.ServiceAccount{},
		List:      &v1alpha1.ServiceAccountList{},
		External:  New,
		// Create looks the account up by name before creating one.
		DeterministicExternalName: true,
		OwnsSecrets:               true,
		// NOTE: its provider config may name the very Secret it writes.
		OptionalCredentials: true,
		// A team-scoped account's team must be a Team of its namespace: no
		// tenant may mint a key for another's team.
		TeamOf: func(cr *v1alpha1.ServiceAccount) (int64, bool) {
			if cr.Spec.ForProvider.Scope != terdut.ScopeTeam {
				return 0, false
			}
			return generic.KnownTeam(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
		},
	})
}

// New returns a ServiceAccount's external client.
func New(d generic.Deps) managed.TypedExternalClient[*v1alpha1.ServiceAccount] {
	e := &external{pc: d.Client, kube: d.Kube, reader: d.Reader, record: d.Record, adoptable: d.Adoptable, now: time.Now}
	e.withKey = func(tok terdut.Secret) (api, error) {
		c, err := d.WithKey(tok)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	if d.Client != nil {
		e.endpoint = d.Client.Endpoint()
		e.pcAuthenticated = d.Authenticated
	}
	return e
}

type external struct {
	pc              api
	pcAuthenticated bool
	withKey         func(terdut.Secret) (api, error)
	endpoint        string
	kube            client.Client
	reader          client.Reader
	record          event.Recorder
	adoptable       generic.Adoptable
	now             func() time.Time

	observed *terdut.ServiceAccount
}

var _ managed.TypedExternalClient[*v1alpha1.ServiceAccount] = (*external)(nil)

// keyState is what the connection Secret says about the active key.
type keyState struct {
	exists    bool
	token     terdut.Secret
	accountID int64
	keyID     int64
	mintedAt  time.Time
	request   string
	revokeID  int64
}

func secretName(cr *v1alpha1.ServiceAccount) string {
	if r := cr.GetWriteConnectionSecretToReference(); r != nil {
		return r.Name
	}
	return ""
}

func checkpointName(cr *v1alpha1.ServiceAccount) string { return cr.GetName() + checkpointSuffix }

// secret reads past the cache: the key state is what this client wrote
// last, and a stale copy would mint again or lose a revocation.
func (e *external) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := e.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	return s, errors.Wrapf(err, errSecret, name)
}

func (e *external) keyState(ctx context.Context, cr *v1alpha1.ServiceAccount) (keyState, error) {
	s, err := e.secret(ctx, cr.GetNamespace(), secretName(cr))
	if err != nil || s == nil {
		return keyState{}, err
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(s.Annotations[k], 10, 64); return n }
	ks := keyState{exists: true, token: terdut.Secret(s.Data[SecretKeyToken]), accountID: num(AnnotationAccountID), keyID: num(AnnotationKeyID), request: s.Annotations[AnnotationRequest], revokeID: num(AnnotationRevokeKeyID)}
	ks.mintedAt, _ = time.Parse(time.RFC3339, s.Annotations[AnnotationMintedAt])
	return ks, nil
}

// admin returns a client that may manage service accounts: the provider
// config's key, else this account's own key (instance scope), else the
// bootstrap checkpoint. nil when there is none.
func (e *external) admin(ctx context.Context, cr *v1alpha1.ServiceAccount, ks keyState) (api, error) {
	if e.pcAuthenticated {
		return e.pc, nil
	}
	if ks.token != "" && cr.Spec.ForProvider.Scope == terdut.ScopeInstance {
		return e.withKey(ks.token)
	}
	cp, err := e.secret(ctx, cr.GetNamespace(), checkpointName(cr))
	if err != nil {
		return nil, err
	}
	if cp != nil && len(cp.Data[SecretKeyToken]) > 0 {
		return e.withKey(terdut.Secret(cp.Data[SecretKeyToken]))
	}
	return nil, nil //nolint:nilnil // No credential is a state, not an error.
}

// mustAdmin is admin, with no credential at all an error.
func (e *external) mustAdmin(ctx context.Context, cr *v1alpha1.ServiceAccount, ks keyState) (api, error) {
	c, err := e.admin(ctx, cr, ks)
	if err == nil && c == nil {
		err = errors.Errorf(errNoCredential, cr.Spec.ForProvider.Name)
	}
	return c, err
}

// Observe finds the account by name and checks the key in the connection
// Secret: a missing key, a due or requested rotation, or an old key still
// to revoke make it not up to date.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalObservation, error) {
	id, ok, err := generic.ExternalID(cr)
	if err != nil || !ok {
		return managed.ExternalObservation{}, err
	}
	ks, err := e.keyState(ctx, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	c, err := e.mustAdmin(ctx, cr, ks)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	sa, err := c.GetServiceAccountByName(ctx, cr.Spec.ForProvider.Name)
	if terdut.IsUnauthorized(err) && meta.WasDeleted(cr) && ks.token != "" {
		// NOTE: Delete removed the account with its own key, which dies
		// with it: a 401 for that key, while deleting, means it is gone.
		return managed.ExternalObservation{}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errLookup)
	}
	if sa == nil || sa.ID != id {
		return managed.ExternalObservation{}, nil
	}
	e.observed = sa
	cr.Status.AtProvider = e.observation(cr, sa, ks)
	cr.SetConditions(xpv2.Available())
	if meta.WasDeleted(cr) {
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
	}
	// A checkpoint left behind by an interrupted bootstrap is deleted once
	// the account's own key is in place: an admin key must not linger.
	if ks.token != "" && ks.accountID == sa.ID {
		if err := e.deleteCheckpoint(ctx, cr); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	upToDate := ks.token != "" && ks.accountID == sa.ID && ks.revokeID == 0 && !e.rotationDue(cr, ks)
	diff := ""
	if !upToDate {
		diff = "the connection Secret needs a new key (missing, rotation due or requested, or an old key to revoke)"
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate, Diff: diff, ConnectionDetails: e.details(ks.token)}, nil
}

func (e *external) rotationDue(cr *v1alpha1.ServiceAccount, ks keyState) bool {
	r := cr.Spec.ForProvider.KeyRotation
	if r == nil {
		return false
	}
	if r.RotationRequest != "" && r.RotationRequest != ks.request {
		return true
	}
	return r.Interval != nil && !ks.mintedAt.IsZero() && !e.now().Before(ks.mintedAt.Add(r.Interval.Duration))
}

func (e *external) observation(cr *v1alpha1.ServiceAccount, sa *terdut.ServiceAccount, ks keyState) v1alpha1.ServiceAccountObservation {
	o := v1alpha1.ServiceAccountObservation{ID: sa.ID, Scope: sa.Scope, ActiveKeyID: ks.keyID, LastRotationRequest: ks.request}
	if sa.TeamID != nil {
		o.TeamID = *sa.TeamID
	}
	if !ks.mintedAt.IsZero() {
		t := metav1.NewTime(ks.mintedAt)
		o.KeyMintedAt = &t
		if r := cr.Spec.ForProvider.KeyRotation; r != nil && r.Interval != nil {
			n := metav1.NewTime(ks.mintedAt.Add(r.Interval.Duration))
			o.NextRotationAt = &n
		}
	}
	return o
}

func (e *external) details(tok terdut.Secret) managed.ConnectionDetails {
	if tok == "" {
		return nil
	}
	return managed.ConnectionDetails{SecretKeyToken: []byte(tok.Reveal()), SecretKeyEndpoint: []byte(e.endpoint)}
}

// Create resumes or starts the way to a working key: a credential (the
// provider config's, the checkpoint, or a bootstrap), the account (adopted
// by name, or created), a key (reused if the Secret already holds a working
// one for this account, else minted), the Secret, then the checkpoint gone.
func (e *external) Create(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalCreation, error) {
	p := cr.Spec.ForProvider
	ks, err := e.keyState(ctx, cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	c, err := e.admin(ctx, cr, ks)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if c == nil {
		if p.Bootstrap == nil {
			return managed.ExternalCreation{}, errors.Errorf(errNoCredential, p.Name)
		}
		if c, err = e.bootstrap(ctx, cr); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	sa, err := e.account(ctx, c, cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if !(ks.token != "" && ks.accountID == sa.ID && e.works(ctx, ks.token)) {
		if ks, err = e.mint(ctx, c, cr, sa, ks); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	if err := e.deleteCheckpoint(ctx, cr); err != nil {
		return managed.ExternalCreation{}, err
	}
	generic.SetExternalID(cr, sa.ID)
	return managed.ExternalCreation{ConnectionDetails: e.details(ks.token)}, nil
}

// works reports whether a key is accepted by the server.
func (e *external) works(ctx context.Context, tok terdut.Secret) bool {
	c, err := e.withKey(tok)
	if err != nil {
		return false
	}
	_, err = c.ListUsers(ctx)
	return err == nil
}

// bootstrap calls the single-shot /api/bootstrap once /healthz answers, and
// checkpoints the admin key before anything else is done with it.
func (e *external) bootstrap(ctx context.Context, cr *v1alpha1.ServiceAccount) (api, error) {
	if err := e.pc.Healthz(ctx); err != nil {
		return nil, errors.Wrap(err, errHealthz)
	}
	b := cr.Spec.ForProvider.Bootstrap
	rsp, err := e.pc.Bootstrap(ctx, terdut.BootstrapRequest{Username: b.Username, Email: b.Email})
	if terdut.IsForbidden(err) {
		msg := fmt.Sprintf(errStateLost, checkpointName(cr))
		cr.SetConditions(generic.Unavailable(ReasonBootstrapStateLost, msg))
		e.record.Event(cr, event.Warning(event.Reason(ReasonBootstrapStateLost), errors.New(msg)))
		return nil, errors.New(msg)
	}
	if err != nil {
		return nil, errors.Wrap(err, errBootstrap)
	}
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cr.GetNamespace(), Name: checkpointName(cr),
		Labels: map[string]string{generic.LabelManagedBy: generic.ManagedBy}}, Data: map[string][]byte{SecretKeyToken: []byte(rsp.APIKey.Key.Reveal())}}
	for i := 0; ; i++ {
		err = e.kube.Create(ctx, cp.DeepCopy())
		if err == nil || kerrors.IsAlreadyExists(err) {
			break
		}
		if i+1 == checkpointWriteRetries {
			return nil, errors.Wrap(err, errCheckpoint)
		}
	}
	e.record.Event(cr, event.Normal(reasonBootstrapped, "Bootstrapped terdut-server; its admin key is checkpointed until the service account's own key is written"))
	return e.withKey(rsp.APIKey.Key)
}

// account adopts the account of this name or creates it.
func (e *external) account(ctx context.Context, c api, cr *v1alpha1.ServiceAccount) (*terdut.ServiceAccount, error) {
	p := cr.Spec.ForProvider
	sa, err := c.GetServiceAccountByName(ctx, p.Name)
	if err != nil {
		return nil, errors.Wrap(err, errLookup)
	}
	if sa == nil {
		want := terdut.ServiceAccount{Name: p.Name, Scope: p.Scope}
		if p.Scope == terdut.ScopeTeam {
			if p.TeamID == nil {
				return nil, errors.New(errNoTeam)
			}
			want.TeamID = p.TeamID
		}
		sa, err = c.CreateServiceAccount(ctx, want)
		if terdut.IsConflict(err) {
			if sa, err = c.GetServiceAccountByName(ctx, p.Name); err == nil && sa == nil {
				err = errors.Errorf(errConflictGone, p.Name)
			}
		}
		if err != nil {
			return nil, errors.Wrap(err, errCreate)
		}
		return sa, nil
	}
	return sa, e.adoptable.Allowed(ctx, sa.ID)
}

// mint mints a key and writes it to the connection Secret in place, noting
// the key it replaces as still to revoke.
func (e *external) mint(ctx context.Context, c api, cr *v1alpha1.ServiceAccount, sa *terdut.ServiceAccount, old keyState) (keyState, error) {
	key, err := c.MintKey(ctx, sa.ID)
	if err != nil {
		return keyState{}, errors.Wrap(err, errMint)
	}
	ks := keyState{exists: true, token: key.Key, accountID: sa.ID, keyID: key.ID, mintedAt: e.now().UTC().Truncate(time.Second)}
	if r := cr.Spec.ForProvider.KeyRotation; r != nil {
		ks.request = r.RotationRequest
	}
	if old.accountID == sa.ID && old.keyID != 0 && old.keyID != key.ID {
		ks.revokeID = old.keyID
	}
	s := resource.LocalConnectionSecretFor(cr, v1alpha1.ServiceAccountGroupVersionKind)
	s.Annotations = map[string]string{
		AnnotationAccountID: generic.FormatID(sa.ID),
		AnnotationKeyID:     generic.FormatID(key.ID),
		AnnotationMintedAt:  ks.mintedAt.Format(time.RFC3339),
		AnnotationRequest:   ks.request,
	}
	if ks.revokeID != 0 {
		s.Annotations[AnnotationRevokeKeyID] = generic.FormatID(ks.revokeID)
	}
	s.Data = e.details(key.Key)
	if err := e.writeSecret(ctx, cr, s); err != nil {
		return keyState{}, err
	}
	return ks, nil
}

// writeSecret replaces the connection Secret's data and annotations.
func (e *external) writeSecret(ctx context.Context, cr *v1alpha1.ServiceAccount, want *corev1.Secret) error {
	cur, err := e.secret(ctx, want.Namespace, want.Name)
	if err != nil {
		return err
	}
	if cur == nil {
		return errors.Wrapf(e.kube.Create(ctx, want), errSecret, want.Name)
	}
	if ref := metav1.GetControllerOf(cur); ref != nil && ref.UID != cr.GetUID() {
		return errors.Errorf(errSecret+": it is controlled by another object", want.Name)
	}
	cur.Annotations, cur.Data, cur.OwnerReferences, cur.Type = want.Annotations, want.Data, want.OwnerReferences, want.Type
	return errors.Wrapf(e.kube.Update(ctx, cur), errSecret, want.Name)
}

func (e *external) deleteCheckpoint(ctx context.Context, cr *v1alpha1.ServiceAccount) error {
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cr.GetNamespace(), Name: checkpointName(cr)}}
	if err := e.kube.Delete(ctx, cp); err != nil && !kerrors.IsNotFound(err) {
		return errors.Wrapf(err, errDeleteCheckpt, cp.Name)
	}
	return nil
}

// Update rotates: a new key is minted and written in place first, and only
// then the old key is revoked, so nothing is left without a working key.
func (e *external) Update(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalUpdate, error) {
	ks, err := e.keyState(ctx, cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	c, err := e.mustAdmin(ctx, cr, ks)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	sa := e.observed
	if sa == nil {
		return managed.ExternalUpdate{}, errors.Errorf(errLookup)
	}
	if ks.token == "" || ks.accountID != sa.ID || e.rotationDue(cr, ks) {
		minted, err := e.mint(ctx, c, cr, sa, ks)
		if err != nil {
			return managed.ExternalUpdate{}, err
		}
		e.record.Event(cr, event.Normal(reasonRotated, fmt.Sprintf("Minted key %d and wrote it to Secret %q", minted.keyID, secretName(cr))))
		ks = minted
	}
	if ks.revokeID == 0 {
		return managed.ExternalUpdate{ConnectionDetails: e.details(ks.token)}, nil
	}
	// NOTE: revoke with the new key's standing: a client that still holds
	// the old key refreshes it from the Secret on its next 401.
	if c, err = e.mustAdmin(ctx, cr, ks); err != nil {
		return managed.ExternalUpdate{}, err
	}
	if err := c.RevokeKey(ctx, sa.ID, ks.revokeID); err != nil && !terdut.IsNotFound(err) {
		return managed.ExternalUpdate{}, errors.Wrapf(err, errRevoke, ks.revokeID)
	}
	s, err := e.secret(ctx, cr.GetNamespace(), secretName(cr))
	if err != nil || s == nil {
		return managed.ExternalUpdate{}, err
	}
	delete(s.Annotations, AnnotationRevokeKeyID)
	if err := e.kube.Update(ctx, s); err != nil {
		return managed.ExternalUpdate{}, errors.Wrapf(err, errSecret, s.Name)
	}
	e.record.Event(cr, event.Normal(reasonRotated, fmt.Sprintf("Revoked the old key %d", ks.revokeID)))
	return managed.ExternalUpdate{ConnectionDetails: e.details(ks.token)}, nil
}

// Delete deletes the account and so its keys.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalDelete, error) {
	id, ok, err := generic.ExternalID(cr)
	if err != nil || !ok {
		return managed.ExternalDelete{}, err
	}
	ks, err := e.keyState(ctx, cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	c, err := e.mustAdmin(ctx, cr, ks)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if err := c.DeleteServiceAccount(ctx, id); err != nil && !terdut.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errDelete)
	}
	return managed.ExternalDelete{}, e.deleteCheckpoint(ctx, cr)
}

// Disconnect does nothing: the client is cached and shared.
func (e *external) Disconnect(_ context.Context) error { return nil }
