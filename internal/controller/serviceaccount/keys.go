package serviceaccount

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
)

// keyState is what the connection Secret says about the active key.
type keyState struct {
	exists    bool
	token     terdut.Secret
	accountID int64
	keyID     int64
	mintedAt  time.Time
	request   string
	revokeID  int64
	// minting is when a mint was marked as under way and not finished.
	minting time.Time
}

func secretName(cr *v1alpha1.ServiceAccount) string {
	if r := cr.GetWriteConnectionSecretToReference(); r != nil {
		return r.Name
	}
	return ""
}

// secret reads through r; nil when there is none.
func secret(ctx context.Context, r client.Reader, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	return s, errors.Wrapf(err, errSecret, name)
}

// keyState reads the connection Secret past the cache: the key state is what
// this client wrote last, and a stale copy would mint again or lose a
// revocation.
func (e *external) keyState(ctx context.Context, cr *v1alpha1.ServiceAccount) (keyState, error) {
	s, err := secret(ctx, e.reader, cr.GetNamespace(), secretName(cr))
	if err != nil || s == nil {
		return keyState{}, err
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(s.Annotations[k], 10, 64); return n }
	ks := keyState{exists: true, token: terdut.Secret(s.Data[SecretKeyToken]), accountID: num(AnnotationAccountID), keyID: num(AnnotationKeyID), request: s.Annotations[AnnotationRequest], revokeID: num(AnnotationRevokeKeyID)}
	ks.mintedAt, _ = time.Parse(time.RFC3339, s.Annotations[AnnotationMintedAt])
	ks.minting, _ = time.Parse(time.RFC3339, s.Annotations[AnnotationMinting])
	return ks, nil
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

const errProbe = "cannot check whether the key in Secret %q still works; not minting another until the server says"

// works asks the server, past every shared answer, whether it accepts a
// key. Only a 401 means it does not: a 5xx, a 429 or a timeout is an error,
// never a reason to mint another key.
func (e *external) works(ctx context.Context, cr *v1alpha1.ServiceAccount, tok terdut.Secret) (bool, error) {
	c, err := e.withKey(purpose(cr, "own"), tok)
	if err != nil {
		return false, err
	}
	err = c.CheckKey(ctx)
	if terdut.IsUnauthorized(err) {
		return false, nil
	}
	return err == nil, errors.Wrapf(err, errProbe, secretName(cr))
}

// mint mints a key and writes it to the connection Secret in place, noting
// the key it replaces as still to revoke.
//
// The Secret says a mint is under way (AnnotationMinting) before the key is
// asked for: a process killed after the server made the key but before the
// Secret holds it would leave a valid key nobody holds. The next mint that
// finds the mark revokes the account's keys made since, but the one the
// Secret holds.
func (e *external) mint(ctx context.Context, c api, cr *v1alpha1.ServiceAccount, sa *terdut.ServiceAccount, old keyState) (keyState, error) {
	if !old.minting.IsZero() {
		if err := e.revokeStray(ctx, c, cr, sa, old); err != nil {
			return keyState{}, err
		}
	}
	if err := e.markMinting(ctx, cr, sa.ID); err != nil {
		return keyState{}, err
	}
	// NOTE: this mint may make a key: a silence waited out before it says
	// nothing about what is there after it.
	e.absence.Seen(cr, 0)
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
		AnnotationAccountID: extclient.FormatID(sa.ID),
		AnnotationKeyID:     extclient.FormatID(key.ID),
		AnnotationMintedAt:  ks.mintedAt.Format(time.RFC3339),
		AnnotationRequest:   ks.request,
	}
	if ks.revokeID != 0 {
		s.Annotations[AnnotationRevokeKeyID] = extclient.FormatID(ks.revokeID)
	}
	s.Data = e.details(key.Key)
	if err := e.writeSecret(ctx, cr, s); err != nil {
		return keyState{}, err
	}
	return ks, nil
}

// markMinting marks the connection Secret (made if need be) with a mint
// under way on account; the Secret mint writes then has no mark.
func (e *external) markMinting(ctx context.Context, cr *v1alpha1.ServiceAccount, account int64) error {
	cur, err := secret(ctx, e.reader, cr.GetNamespace(), secretName(cr))
	if err != nil {
		return err
	}
	now := e.now().UTC().Format(time.RFC3339)
	if cur == nil {
		s := resource.LocalConnectionSecretFor(cr, v1alpha1.ServiceAccountGroupVersionKind)
		s.Annotations = map[string]string{AnnotationMinting: now, AnnotationMintingAccount: extclient.FormatID(account)}
		return e.writeSecret(ctx, cr, s)
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[AnnotationMinting] = now
	cur.Annotations[AnnotationMintingAccount] = extclient.FormatID(account)
	return e.writeSecret(ctx, cr, cur)
}

const (
	errConfirmingStray = "a mint of a key on service account %d was interrupted at %s, and the account's keys show none made since: confirming with a fresh read at %s before minting another (a list can omit what exists, and a key nobody holds must be revoked)"
	errListKeys        = "cannot list the keys of service account %d to revoke one an interrupted mint may have made"
	msgStrayKey        = "Revoked key %d of service account %d: an interrupted mint made it at %s, and no Secret held it"
	msgNoList          = "A mint of a key on service account %d was interrupted at %s, and the server cannot list the account's keys (%v): a key made then may be valid and held by nobody. Revoke keys of the account made at that time on the server"
)

// revokeStray revokes the keys of sa that an interrupted mint (marked at
// old.minting) may have made: those made since, but the one the Secret
// holds. A server that cannot list keys gets a Warning instead.
func (e *external) revokeStray(ctx context.Context, c api, cr *v1alpha1.ServiceAccount, sa *terdut.ServiceAccount, old keyState) error {
	listed, err := c.ListKeys(ctx, sa.ID)
	if terdut.IsNotFound(err) || statusIs(err, http.StatusMethodNotAllowed) {
		e.record.Event(cr, event.Warning(reasonStrayKey, errors.Errorf(msgNoList, sa.ID, old.minting.Format(time.RFC3339), err)))
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, errListKeys, sa.ID)
	}
	since := old.minting.Add(-extclient.ClockAllowance)
	stray := func(k terdut.APIKey) bool {
		return k.ID != old.keyID && !k.CreatedAt.IsZero() && !k.CreatedAt.Before(since)
	}
	if !slices.ContainsFunc(listed, stray) {
		// NOTE: a list can omit what exists: only a read some time after
		// that shows no such key either lets the next mint forget this one.
		if due, at := e.absence.NoneYet(cr); !due {
			return errors.Errorf(errConfirmingStray, sa.ID, old.minting.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
		}
	}
	for _, k := range listed {
		if !stray(k) {
			continue
		}
		if err := c.RevokeKey(ctx, sa.ID, k.ID); err != nil && !terdut.IsNotFound(err) {
			return errors.Wrapf(err, errRevoke, k.ID)
		}
		e.record.Event(cr, event.Normal(reasonStrayKey, fmt.Sprintf(msgStrayKey, k.ID, sa.ID, k.CreatedAt.UTC().Format(time.RFC3339))))
	}
	return nil
}

// statusIs reports whether err is a terdut-server answer of status code.
func statusIs(err error, code int) bool {
	var a *terdut.APIError
	return errors.As(err, &a) && a.StatusCode == code
}

// writeSecret replaces the connection Secret's data and annotations.
func (e *external) writeSecret(ctx context.Context, cr *v1alpha1.ServiceAccount, want *corev1.Secret) error {
	cur, err := secret(ctx, e.reader, want.Namespace, want.Name)
	if err != nil {
		return err
	}
	if cur == nil {
		secretcache.OwnSecret(want)
		return errors.Wrapf(e.kube.Create(ctx, want), errSecret, want.Name)
	}
	if ref := metav1.GetControllerOf(cur); ref != nil && ref.UID != cr.GetUID() {
		return errors.Errorf(errSecret+": it is controlled by another object", want.Name)
	}
	for _, o := range cur.GetOwnerReferences() {
		// NOTE: another ServiceAccount's Secret (its bootstrap
		// checkpoint, written by an older release with an owner
		// reference only) may hold an admin key: never written over.
		if o.Kind == v1alpha1.ServiceAccountKind && o.UID != cr.GetUID() {
			return errors.Errorf(errSecret+": it belongs to ServiceAccount %q", want.Name, o.Name)
		}
	}
	cur.Annotations, cur.Data, cur.OwnerReferences, cur.Type = want.Annotations, want.Data, want.OwnerReferences, want.Type
	secretcache.OwnSecret(cur)
	return errors.Wrapf(e.kube.Update(ctx, cur), errSecret, want.Name)
}

// revokeOld revokes the key a rotation replaced, with the new key's
// standing: a client that still holds the old key refreshes it from the
// Secret on its next 401. Then the Secret forgets it.
func (e *external) revokeOld(ctx context.Context, cr *v1alpha1.ServiceAccount, sa *terdut.ServiceAccount, ks keyState) error {
	c, err := e.mustAdmin(ctx, cr, ks)
	if err != nil {
		return err
	}
	if err := c.RevokeKey(ctx, sa.ID, ks.revokeID); err != nil && !terdut.IsNotFound(err) {
		return errors.Wrapf(err, errRevoke, ks.revokeID)
	}
	s, err := secret(ctx, e.reader, cr.GetNamespace(), secretName(cr))
	if err != nil || s == nil {
		return err
	}
	delete(s.Annotations, AnnotationRevokeKeyID)
	if err := e.kube.Update(ctx, s); err != nil {
		return errors.Wrapf(err, errSecret, s.Name)
	}
	e.record.Event(cr, event.Normal(reasonRotated, fmt.Sprintf("Revoked the old key %d", ks.revokeID)))
	return nil
}
