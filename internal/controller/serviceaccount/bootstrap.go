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
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
)

func checkpointName(cr *v1alpha1.ServiceAccount) string { return cr.GetName() + checkpointSuffix }

// checkpoint is the bootstrap checkpoint Secret as r reads it; nil when
// there is none. Only a Secret this MR owns is its checkpoint: one of that
// name another object owns (another ServiceAccount's connection Secret, say)
// is neither used nor deleted. Nor is the MR's own connection Secret, were
// it named like its checkpoint: it holds the account's live key.
func (e *external) checkpoint(ctx context.Context, r client.Reader, cr *v1alpha1.ServiceAccount) (*corev1.Secret, error) {
	if checkpointName(cr) == secretName(cr) {
		return nil, nil //nolint:nilnil // The connection Secret is no checkpoint.
	}
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
	// NOTE: the admin key a bootstrap answers is shown once; with the
	// checkpoint's name taken (another object's Secret, or the MR's own
	// connection Secret) it could be kept nowhere and would stay valid,
	// held by nobody. The single-shot bootstrap is not spent then.
	taken, err := e.checkpointNameTaken(ctx, cr)
	if err != nil {
		return nil, err
	}
	if taken {
		msg := fmt.Sprintf(errCheckpointTaken, checkpointName(cr))
		e.record.Event(cr, event.Warning(event.Reason(ReasonCheckpointNameTaken), errors.New(msg)))
		return nil, extclient.Refuse(cr, ReasonCheckpointNameTaken, msg)
	}
	if err := e.pc.Healthz(ctx); err != nil {
		return nil, errors.Wrap(err, errHealthz)
	}
	b := cr.Spec.ForProvider.Bootstrap
	rsp, err := e.pc.Bootstrap(ctx, terdut.BootstrapRequest{Username: b.Username, Email: b.Email})
	if terdut.IsForbidden(err) {
		msg := fmt.Sprintf(errStateLost, checkpointName(cr))
		e.record.Event(cr, event.Warning(event.Reason(ReasonBootstrapStateLost), errors.New(msg)))
		return nil, extclient.Refuse(cr, ReasonBootstrapStateLost, msg)
	}
	if err != nil {
		return nil, errors.Wrap(err, errBootstrap)
	}
	// NOTE: the checkpoint is controlled by the MR, so it goes with it even
	// if the MR is deleted before Create recorded the account, and no
	// other MR's connection Secret may take its name over (writers refuse
	// a Secret another object controls).
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: cr.GetNamespace(), Name: checkpointName(cr),
		Labels:          map[string]string{secretcache.LabelManagedBy: secretcache.ManagedBy},
		OwnerReferences: []metav1.OwnerReference{meta.AsController(meta.TypedReferenceTo(cr, v1alpha1.ServiceAccountGroupVersionKind))},
	}, Data: map[string][]byte{
		SecretKeyToken: []byte(rsp.APIKey.Key.Reveal()),
		// Which key it is, so that it can be revoked once the account's
		// own key is written.
		checkpointUserID: []byte(extclient.FormatID(rsp.User.ID)),
		checkpointKeyID:  []byte(extclient.FormatID(rsp.APIKey.ID)),
	}}
	for i := 0; ; i++ {
		err = e.kube.Create(ctx, cp.DeepCopy())
		if err == nil {
			break
		}
		if kerrors.IsAlreadyExists(err) {
			// NOTE: an earlier try of this loop may have written it (its
			// answer lost); a Secret another wrote since the check above
			// does not hold this key, which then goes at once.
			if err := e.checkpointHolds(ctx, cr, rsp); err != nil {
				return nil, err
			}
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

// ReasonCheckpointNameTaken is the Ready=False reason of a ServiceAccount
// that would bootstrap while a Secret it does not own has its checkpoint's
// name (<name>-bootstrap-admin): the admin key could be kept nowhere.
const ReasonCheckpointNameTaken xpv2.ConditionReason = "CheckpointNameTaken"

const (
	errCheckpointTaken = "a Secret %q that this ServiceAccount does not own has the name of its bootstrap checkpoint, which keeps the admin key the bootstrap answers once: nothing was bootstrapped. Rename or delete that Secret, or point writeConnectionSecretToRef elsewhere"
	errCheckpointLost  = "the bootstrap checkpoint %q was written by another meanwhile and does not hold the admin key; the key was revoked and the server stays bootstrapped (set a provider config key to go on)"
)

// checkpointNameTaken reports whether a Secret this MR may not use as its
// checkpoint has the checkpoint's name (the API server is asked, not the
// cache: a bootstrap can be done once).
func (e *external) checkpointNameTaken(ctx context.Context, cr *v1alpha1.ServiceAccount) (bool, error) {
	if checkpointName(cr) == secretName(cr) {
		return true, nil
	}
	s, err := secret(ctx, e.reader, cr.GetNamespace(), checkpointName(cr))
	if err != nil || s == nil {
		return false, err
	}
	own, err := e.checkpoint(ctx, e.reader, cr)
	return own == nil, err
}

// checkpointHolds checks that the checkpoint of this MR's holds the admin
// key of rsp; when it does not, that key is revoked with itself (nobody
// would hold it) and an error says so.
func (e *external) checkpointHolds(ctx context.Context, cr *v1alpha1.ServiceAccount, rsp *terdut.BootstrapResponse) error {
	cur, err := e.checkpoint(ctx, e.reader, cr)
	if err != nil {
		return err
	}
	if cur != nil && string(cur.Data[checkpointKeyID]) == extclient.FormatID(rsp.APIKey.ID) {
		return nil
	}
	admin, err := e.withKey(purpose(cr, "checkpoint"), rsp.APIKey.Key)
	if err != nil {
		return err
	}
	if err := admin.RevokeUserKey(ctx, rsp.User.ID, rsp.APIKey.ID); err != nil && !terdut.IsNotFound(err) && !terdut.IsUnauthorized(err) {
		return errors.Wrapf(err, errRevokeAdmin, rsp.APIKey.ID, checkpointName(cr))
	}
	return errors.Errorf(errCheckpointLost, checkpointName(cr))
}
