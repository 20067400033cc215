package serviceaccount

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

func checkpointName(cr *v1alpha1.ServiceAccount) string { return cr.GetName() + checkpointSuffix }

// checkpoint is the bootstrap checkpoint Secret as r reads it; nil when
// there is none. Only a Secret this MR owns is its checkpoint: one of that
// name another object owns (another ServiceAccount's connection Secret, say)
// is neither used nor deleted.
func (e *external) checkpoint(ctx context.Context, r client.Reader, cr *v1alpha1.ServiceAccount) (*corev1.Secret, error) {
	s, err := secret(ctx, r, cr.GetNamespace(), checkpointName(cr))
	if err != nil || s == nil {
		return nil, err
	}
	for _, o := range s.GetOwnerReferences() {
		if o.UID == cr.GetUID() {
			return s, nil
		}
	}
	return nil, nil //nolint:nilnil // Another object's Secret is no checkpoint of this MR's.
}

// admin returns a client that may manage service accounts: the provider
// config's key, else this account's own key (instance scope), else the
// bootstrap checkpoint. nil when there is none.
func (e *external) admin(ctx context.Context, cr *v1alpha1.ServiceAccount, ks keyState) (api, error) {
	if e.pcAuthenticated {
		return e.pc, nil
	}
	if ks.token != "" && cr.Spec.ForProvider.Scope == terdut.ScopeInstance {
		return e.withKey(purpose(cr, "own"), ks.token)
	}
	cp, err := e.checkpoint(ctx, e.reader, cr)
	if err != nil {
		return nil, err
	}
	if cp != nil && len(cp.Data[SecretKeyToken]) > 0 {
		return e.withKey(purpose(cr, "checkpoint"), terdut.Secret(cp.Data[SecretKeyToken]))
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
		e.record.Event(cr, event.Warning(event.Reason(ReasonBootstrapStateLost), errors.New(msg)))
		return nil, generic.Refuse(cr, ReasonBootstrapStateLost, msg)
	}
	if err != nil {
		return nil, errors.Wrap(err, errBootstrap)
	}
	// NOTE: the checkpoint is owned by the MR, so it goes with it even if
	// the MR is deleted before Create recorded the account.
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: cr.GetNamespace(), Name: checkpointName(cr),
		Labels:          map[string]string{generic.LabelManagedBy: generic.ManagedBy},
		OwnerReferences: []metav1.OwnerReference{meta.AsOwner(meta.TypedReferenceTo(cr, v1alpha1.ServiceAccountGroupVersionKind))},
	}, Data: map[string][]byte{
		SecretKeyToken: []byte(rsp.APIKey.Key.Reveal()),
		// Which key it is, so that it can be revoked once the account's
		// own key is written.
		checkpointUserID: []byte(generic.FormatID(rsp.User.ID)),
		checkpointKeyID:  []byte(generic.FormatID(rsp.APIKey.ID)),
	}}
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
	return e.withKey(purpose(cr, "checkpoint"), rsp.APIKey.Key)
}

// Keys of the checkpoint Secret besides the admin key: its user's and its
// own ID.
const (
	checkpointUserID = "user-id"
	checkpointKeyID  = "key-id"
)

const errRevokeAdmin = "cannot revoke the bootstrap admin key %d; the checkpoint %q that holds it stays until it is revoked"

// deleteCheckpoint revokes the bootstrap admin key on the server, then
// deletes the checkpoint Secret that holds it: an admin key nobody holds
// must not stay valid. A checkpoint that does not say which key it holds
// (written by an older release) is only deleted.
func (e *external) deleteCheckpoint(ctx context.Context, cr *v1alpha1.ServiceAccount) error {
	cur, err := e.checkpoint(ctx, e.reader, cr)
	if err != nil || cur == nil {
		return err
	}
	uid, _ := strconv.ParseInt(string(cur.Data[checkpointUserID]), 10, 64)
	kid, _ := strconv.ParseInt(string(cur.Data[checkpointKeyID]), 10, 64)
	if uid > 0 && kid > 0 && e.withKey != nil {
		admin, err := e.withKey(purpose(cr, "checkpoint"), terdut.Secret(cur.Data[SecretKeyToken]))
		if err != nil {
			return err
		}
		// NOTE: with the admin key itself. A 401 means it is revoked
		// already (an earlier attempt revoked it, then failed to delete
		// the Secret); a 404 likewise.
		if err := admin.RevokeUserKey(ctx, uid, kid); err != nil && !terdut.IsNotFound(err) && !terdut.IsUnauthorized(err) {
			return errors.Wrapf(err, errRevokeAdmin, kid, cur.Name)
		}
	}
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cr.GetNamespace(), Name: checkpointName(cr)}}
	if err := e.kube.Delete(ctx, cp); err != nil && !kerrors.IsNotFound(err) {
		return errors.Wrapf(err, errDeleteCheckpt, cp.Name)
	}
	return nil
}
