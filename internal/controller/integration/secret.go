package integration

// The connection Secret: the one place an integration's url and key live.

import (
	"context"
	"fmt"
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

// OrphanWindow bounds the clean-up of an interrupted Create: only within it
// after the Secret was marked "creating" is an integration of the MR's name
// taken for that Create's orphan. Later, one of that name may be anyone's
// (say, made by hand to unblock senders while the provider was down): it is
// adopted, never deleted, and the missing key is reported
// (WebhookSecretLost).
const OrphanWindow = 10 * time.Minute

// orphanClockAllowance is how far the server's clock may be behind ours
// when it says when an integration was made.
const orphanClockAllowance = time.Minute

// deleteOrphan deletes the integration an interrupted Create left behind:
// the Secret is still marked "creating", recently, and does not hold the
// key of the integration of the MR's name. Nobody holds that key, so
// deleting it breaks nothing, and adopting it would leave the MR without a
// key.
func (e *external) deleteOrphan(ctx context.Context, cr *v1alpha1.Integration, teamID int64, s *corev1.Secret, seen *terdut.Integration) (bool, error) {
	if s == nil || s.Annotations[AnnotationCreating] == "" || !controlledBy(s, cr) {
		return false, nil
	}
	marked, err := time.Parse(time.RFC3339, s.Annotations[AnnotationCreating])
	if err != nil || e.clock().Sub(marked) > OrphanWindow {
		return false, nil //nolint:nilerr // An unreadable or old mark: nothing is taken for an orphan.
	}
	name := cr.Spec.ForProvider.Name
	if n := s.Annotations[AnnotationCreatingName]; n != "" {
		name = n // the spec may have been renamed since
	}
	// NOTE: what the read that decided this create showed is the orphan; a
	// second read may omit it.
	orphan := seen
	if orphan == nil || orphan.Name != name {
		if orphan, err = e.find(ctx, teamID, byName(name)); err != nil {
			return false, err
		}
	}
	if orphan == nil || s.Annotations[AnnotationIntegrationID] == extclient.FormatID(orphan.ID) {
		return false, nil
	}
	if !orphan.CreatedAt.IsZero() && orphan.CreatedAt.Before(marked.Add(-orphanClockAllowance)) {
		// Made before the interrupted Create began: not its orphan.
		return false, nil
	}
	if refused := e.adopter.Check.Allowed(ctx, orphan.ID); refused != nil {
		// Another MR manages it: not ours to delete; adoption refuses it
		// too, with the reason.
		return false, nil //nolint:nilerr // A refusal here means "not ours", not a failure.
	}
	if err := e.api.DeleteIntegration(ctx, teamID, orphan.ID); err != nil && !terdut.IsNotFound(err) {
		return false, errors.Wrapf(err, errDeleteOrphan, orphan.ID)
	}
	e.record.Event(cr, event.Normal(reasonOrphanDeleted, fmt.Sprintf(msgOrphan, orphan.ID)))
	return orphan == seen, nil
}

// keep writes a just-created integration's url and key to the connection
// Secret. If that fails, the integration is deleted again: nobody holds its
// key. If even that fails, its ID is recorded so the loss is reported
// (WebhookSecretLost) rather than the integration leaked. cur is the
// Secret as Create last wrote it.
func (e *external) keep(ctx context.Context, cr *v1alpha1.Integration, teamID int64, in *terdut.Integration, cur *corev1.Secret) error {
	_, err := e.writeSecretOver(ctx, cr, cur, map[string]string{AnnotationIntegrationID: extclient.FormatID(in.ID)}, details(in))
	if err == nil {
		return nil
	}
	if derr := e.api.DeleteIntegration(ctx, teamID, in.ID); derr != nil && !terdut.IsNotFound(derr) {
		extclient.SetExternalID(cr, in.ID)
		return errors.Wrapf(err, errWriteSecretKept, secretName(cr), in.ID)
	}
	return errors.Wrapf(err, errWriteSecret, secretName(cr), in.ID)
}

// writeSecretOver replaces the connection Secret cur (nil: there is none)
// with the annotations (plus the one naming the MR) and data, if the Secret
// is the MR's to write, and returns it as the API server stored it.
func (e *external) writeSecretOver(ctx context.Context, cr *v1alpha1.Integration, cur *corev1.Secret, annotations map[string]string, data map[string][]byte) (*corev1.Secret, error) {
	want := resource.LocalConnectionSecretFor(cr, v1alpha1.IntegrationGroupVersionKind)
	want.Annotations = annotations
	want.Annotations[AnnotationIntegration] = cr.GetName()
	want.Data = data
	if cur == nil {
		secretcache.OwnSecret(want)
		return want, e.kube.Create(ctx, want)
	}
	if err := resource.ConnectionSecretMustBeControllableBy(cr.GetUID())(ctx, cur, want); err != nil {
		return nil, err
	}
	want.ResourceVersion, want.Labels = cur.ResourceVersion, cur.Labels
	secretcache.OwnSecret(want)
	return want, e.kube.Update(ctx, want)
}

// unmark writes the Secret back as it was before a create the server
// refused marked it (prev; nil: it did not exist, and it is left empty).
func (e *external) unmark(ctx context.Context, cr *v1alpha1.Integration, marked, prev *corev1.Secret) error {
	annotations, data := map[string]string{}, map[string][]byte(nil)
	if prev != nil {
		for k, v := range prev.Annotations {
			if k != AnnotationCreating && k != AnnotationCreatingName {
				annotations[k] = v
			}
		}
		data = prev.Data
	}
	if _, err := e.writeSecretOver(ctx, cr, marked, annotations, data); err != nil {
		return errors.Wrapf(err, errUnmarkSecret, secretName(cr))
	}
	return nil
}

// controlledBy reports whether cr controls the Secret: only then do its
// marks say what cr's creates did.
func controlledBy(s *corev1.Secret, cr *v1alpha1.Integration) bool {
	c := metav1.GetControllerOf(s)
	return c != nil && c.UID == cr.GetUID()
}

// secret is the connection Secret as r reads it; nil when there is none.
func (e *external) secret(ctx context.Context, r client.Reader, cr *v1alpha1.Integration) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: secretName(cr)}, s)
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, errGetSecret)
	}
	return s, nil
}

func (e *external) clock() time.Time {
	if e.now == nil {
		return time.Now()
	}
	return e.now()
}

// read is the reader past the cache (the cache itself in unit tests).
func (e *external) read() client.Reader {
	if e.reader != nil {
		return e.reader
	}
	return e.kube
}

// secretDetails returns the url and key in the connection Secret, or nil
// when the Secret is gone, incomplete, or holds another integration's key.
func (e *external) secretDetails(ctx context.Context, r client.Reader, cr *v1alpha1.Integration, id int64) (managed.ConnectionDetails, error) {
	s, err := e.secret(ctx, r, cr)
	if err != nil || s == nil {
		return nil, err
	}
	if s.Annotations[AnnotationIntegrationID] != extclient.FormatID(id) || len(s.Data[SecretKeyURL]) == 0 || len(s.Data[SecretKeyKey]) == 0 {
		return nil, nil
	}
	return managed.ConnectionDetails{SecretKeyURL: s.Data[SecretKeyURL], SecretKeyKey: s.Data[SecretKeyKey]}, nil
}

func details(in *terdut.Integration) managed.ConnectionDetails {
	return managed.ConnectionDetails{SecretKeyURL: []byte(in.URL.Reveal()), SecretKeyKey: []byte(in.Key.Reveal())}
}
