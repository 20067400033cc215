// Package integration manages a terdut-server team's alert sources as
// Integration managed resources. An integration's webhook URL and key are
// shown by the server once, in the answer to the POST that made it, so this
// controller writes them to the MR's connection Secret itself, before Create
// returns, and treats the loss of that Secret as fail-closed.
package integration

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

// ReasonWebhookSecretLost is the Ready=False reason for a connection Secret
// lost while its integration still exists.
const ReasonWebhookSecretLost xpv2.ConditionReason = "WebhookSecretLost"

// reasonOrphanDeleted: the event of an orphan of an interrupted create
// deleted before the integration is made again.
const reasonOrphanDeleted event.Reason = "DeletedOrphanedIntegration"

// Keys of the connection Secret, usable by Alertmanager's webhook_configs as
// files (url_file, and the key as a bearer token file).
const (
	SecretKeyURL = "url"
	SecretKeyKey = "key"

	// AnnotationIntegrationID on the Secret says whose key it holds.
	AnnotationIntegrationID = "terdut.ryuvia.com/integration-id"
	// AnnotationIntegration on the Secret names the Integration that wrote
	// it. NOTE: an annotation, not a label: an MR name may be 253
	// characters long, a label value only 63.
	AnnotationIntegration = "terdut.ryuvia.com/integration"
	// AnnotationCreating on the Secret says a Create was about to POST the
	// integration, at that time. Until the key is written, an integration
	// of the MR's name that the Secret does not hold is that Create's
	// orphan: nobody has its key.
	AnnotationCreating = "terdut.ryuvia.com/creating"
	// AnnotationCreatingName is the name that Create was about to POST
	// (the spec may be renamed before a lost create is resumed). Anyone who
	// may write the Secret may write it too, so deleting the MR never goes
	// by it: that deletes at most an integration of the spec's own name.
	AnnotationCreatingName = "terdut.ryuvia.com/creating-name"
)

const (
	errListIntegrations  = "cannot list integrations"
	errRenameIntegration = "cannot rename integration"
	errDeleteIntegration = "cannot delete integration"
	errNoSecretRef       = "spec.writeConnectionSecretToRef is required: the webhook url and key are written only there"
	errGetSecret         = "cannot get the connection Secret"
	errPrepareSecret     = "cannot prepare the connection Secret %q for the webhook url and key; no integration was created"
	errUnmarkSecret      = "cannot remove from the connection Secret %q the mark of a create the server refused"
	errWriteSecret       = "cannot write the webhook url and key to the connection Secret %q; integration %d was deleted again since nobody holds its key"
	errDeleteOrphan      = "cannot delete integration %d, which an interrupted create left without a key"
	msgOrphan            = "Deleted integration %d: an interrupted create made it, and its url and key were never written anywhere. Creating it again."
	errWriteSecretKept   = "cannot write the webhook url and key to the connection Secret %q, nor delete integration %d again: its key is lost"
	errSecretLost        = "the connection Secret lost the webhook url and key: see the Ready condition"
	msgSecretLost        = "Secret %q no longer holds the webhook url and key of integration %d, and terdut-server never shows them again. No new key was minted, so nothing that sends to this integration broke. To get a new URL and key, delete and recreate this Integration."
	msgRecreated         = "integration %d was gone from terdut-server (deleted outside Kubernetes?): integration %d was created in its place, with a NEW webhook URL and key in Secret %q. Senders using the old URL and key fail until they read the new Secret."
	msgImported          = "integration %d is imported (management policies without Create): its url and key were shown once, to whoever made it, and are not in the connection Secret"
	msgKeyRotated        = "kind changed from %s to %s: integration %d was deleted and %d created in its place, with a NEW webhook URL and key in Secret %q. Senders using the old URL and key fail until they read the new Secret."
)

// api is the part of terdut-server's API an Integration needs.
type api interface {
	ListIntegrations(ctx context.Context, teamID int64) ([]terdut.Integration, error)
	ListIntegrationsFresh(ctx context.Context, teamID int64) ([]terdut.Integration, error)
	CreateIntegration(ctx context.Context, teamID int64, kind, name string) (*terdut.Integration, error)
	RenameIntegration(ctx context.Context, teamID, integrationID int64, name string) error
	DeleteIntegration(ctx context.Context, teamID, integrationID int64) error
}

var _ api = (*terdut.Client)(nil)

// Setup adds the Integration controller to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	return generic.SetupGated(mgr, o, generic.ChildOfTeam(generic.Kind[*v1alpha1.Integration]{
		Object:         &v1alpha1.Integration{},
		External:       New,
		Observed:       func(cr *v1alpha1.Integration) int64 { return cr.Status.AtProvider.ID },
		OwnAnnotations: extclient.AttemptAnnotations(),
		// Create lists the team's integrations and adopts one of the same
		// name before it POSTs, so a retried Create cannot duplicate.
		DeterministicExternalName: true,
		OwnsSecrets:               true,
	}))
}

// New returns an Integration's external client.
func New(d generic.Deps) managed.TypedExternalClient[*v1alpha1.Integration] {
	return &external{api: d.Client, kube: d.Kube, reader: d.Reader, record: d.Record, adopter: d.Adopter, now: time.Now, absence: d.Absence}
}

type external struct {
	api  api
	kube client.Client
	// reader reads past the cache, to confirm a Secret the cache misses.
	reader  client.Reader
	record  event.Recorder
	adopter extclient.Adopter
	// replace is an integration Observe found of another kind than the
	// spec's: Create deletes it before it creates the new one.
	replace *terdut.Integration
	// now is the clock the orphan clean-up is bounded by (nil: time.Now).
	now func() time.Time
	// absence confirms an integration its team's list omits is gone (nil:
	// at once).
	absence *extclient.Absence
	// freshLists makes find read past the shared answers: a Create
	// after one whose result was lost.
	freshLists bool
}

var _ managed.TypedExternalClient[*v1alpha1.Integration] = (*external)(nil)

// Observe finds the integration in its team's list and checks that the
// connection Secret still holds its url and key. It hands the Secret's data
// back as connection details, so the reconciler's publisher finds nothing to
// change.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.Integration) (managed.ExternalObservation, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err == nil && !ok && meta.WasDeleted(cr) {
		return e.observeLost(ctx, cr)
	}
	if err != nil || !ok {
		return managed.ExternalObservation{}, err
	}
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	byID := func(in terdut.Integration) bool { return in.ID == id }
	cur, err := e.find(ctx, teamID, byID)
	if terdut.IsNotFound(err) {
		return managed.ExternalObservation{}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if cur == nil {
		// NOTE: a list is not a 404, and making it again would rotate
		// its key: only a fresh read, some time after, that does not
		// show it either means it is gone.
		fresh := func(ctx context.Context) ([]terdut.Integration, error) {
			return e.api.ListIntegrationsFresh(ctx, teamID)
		}
		if cur, err = extclient.Reread(ctx, e.absence, cr, "integration", id, fresh, byID, errListIntegrations); err != nil {
			return managed.ExternalObservation{}, err
		}
		if cur == nil && meta.WasDeleted(cr) && extclient.Recreates(cr) {
			// NOTE: the recorded integration is gone; a create made since
			// (it was deleted outside Kubernetes and made again) may have
			// lost its answer, and what it made has a working key.
			return e.observeLost(ctx, cr)
		}
		if cur == nil {
			return managed.ExternalObservation{}, nil
		}
	}
	e.absence.Seen(cr, id)
	replaced := cr.Status.AtProvider.ReplacedIDs
	if len(replaced) > 0 {
		if list, err := e.api.ListIntegrations(ctx, teamID); err == nil {
			extclient.Predecessors(e.record, cr, "integration", replaced, id, func(p int64) bool {
				return extclient.FindFirst(list, func(in terdut.Integration) bool { return in.ID == p }) != nil
			})
		}
	}
	cr.Status.AtProvider = v1alpha1.IntegrationObservation{ID: cur.ID, TeamID: teamID, Kind: cur.Kind, Name: cur.Name, ReplacedIDs: replaced}
	if meta.WasDeleted(cr) {
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
	}
	if cur.Kind != kindOf(cr.Spec.ForProvider) && mayCreate(cr) {
		// NOTE: the server cannot change a kind: the integration is
		// replaced, and Create does that, because the runtime records
		// the ID of what Create made (after an Update it records status
		// only).
		e.replace = cur
		return managed.ExternalObservation{}, nil
	}
	diff := Diff(cr.Spec.ForProvider, *cur)

	details, err := e.secretDetails(ctx, e.kube, cr, id)
	if err == nil && details == nil && e.reader != nil {
		// NOTE: the cache may not have seen the Secret Create wrote a
		// moment ago: only a read past it may call the key lost.
		details, err = e.secretDetails(ctx, e.reader, cr, id)
	}
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if details == nil && !mayCreate(cr) {
		// NOTE: an import (policies without Create) never had the key:
		// the server showed it once, to whoever made it. Nothing is lost.
		extclient.Mark(cr, xpv2.Available().WithMessage(fmt.Sprintf(msgImported, id)))
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff}, nil
	}
	if details == nil {
		msg := fmt.Sprintf(msgSecretLost, secretName(cr), id)
		extclient.Mark(cr, extclient.Unavailable(ReasonWebhookSecretLost, msg))
		e.record.Event(cr, event.Warning(event.Reason(ReasonWebhookSecretLost), errors.New(msg)))
		return managed.ExternalObservation{}, errors.New(errSecretLost)
	}
	extclient.Mark(cr, xpv2.Available())
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff, ConnectionDetails: details}, nil
}

// find returns the team's first integration that matches, or nil.
func (e *external) find(ctx context.Context, teamID int64, match func(terdut.Integration) bool) (*terdut.Integration, error) {
	ls := e.api.ListIntegrations
	if e.freshLists {
		ls = e.api.ListIntegrationsFresh
	}
	list, err := ls(ctx, teamID)
	if err != nil {
		return nil, errors.Wrap(err, errListIntegrations)
	}
	return extclient.FindFirst(list, match), nil
}

// Create adopts the team's integration of the same name if there is one
// (its key stays wherever an earlier attempt wrote it), and otherwise POSTs
// one and writes its url and key to the connection Secret before returning.
// An integration of another kind that Observe found is deleted first: that
// rotates the key, and a Warning says so.
func (e *external) Create(ctx context.Context, cr *v1alpha1.Integration) (managed.ExternalCreation, error) {
	p := cr.Spec.ForProvider
	if cr.GetWriteConnectionSecretToReference() == nil {
		return managed.ExternalCreation{}, errors.New(errNoSecretRef)
	}
	teamID, err := extclient.TeamID(p.TeamID, 0)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	gone, hadOld, _ := extclient.ExternalID(cr)
	old := e.replace
	if old != nil {
		if err := e.api.DeleteIntegration(ctx, teamID, old.ID); err != nil && !terdut.IsNotFound(err) {
			return managed.ExternalCreation{}, errors.Wrap(err, errDeleteIntegration)
		}
	}
	// NOTE: the Secret is read once, past the cache, and then known: only
	// this Create writes it until it returns (each write below hands on
	// what the API server stored).
	s, err := e.secret(ctx, e.read(), cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	kept, seen, err := e.confirmInterrupted(ctx, cr, teamID, s)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if kept != nil {
		// A lost create's integration whose key the Secret holds: it is
		// this MR's (Update renames it if the spec changed meanwhile).
		e.record.Event(cr, event.Normal(extclient.ReasonAdopted, fmt.Sprintf("Adopted integration %d, whose url and key Secret %q holds: an earlier create made it and its ID was not recorded", kept.ID, secretName(cr))))
		e.absence.Done(cr)
		extclient.SetExternalID(cr, kept.ID)
		return managed.ExternalCreation{}, nil
	}
	deleted, err := e.deleteOrphan(ctx, cr, teamID, s, seen)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	in, adopted, err := extclient.AdoptOrCreate(ctx, e.adopter, extclient.Natural[terdut.Integration]{
		Kind: "integration", Name: p.Name,
		Lookup: func(ctx context.Context) (*terdut.Integration, error) {
			// NOTE: an integration one read showed exists, whatever the
			// next read says (a list can omit what exists): it is not
			// made a second time.
			if seen != nil && !deleted && seen.Name == p.Name {
				return seen, nil
			}
			return e.find(ctx, teamID, byName(p.Name))
		},
		Create: func(ctx context.Context) (*terdut.Integration, error) {
			// NOTE: the Secret is written first, marked "creating": a
			// Secret the server would refuse (or one another object
			// controls) fails here, before a key exists that nobody
			// could hold, and before anything is marked.
			prev := s
			marked, err := e.writeSecretOver(ctx, cr, s, map[string]string{AnnotationCreating: e.clock().UTC().Format(time.RFC3339), AnnotationCreatingName: p.Name}, nil)
			if err != nil {
				return nil, errors.Wrapf(err, errPrepareSecret, secretName(cr))
			}
			s = marked
			// NOTE: the attempt is marked on the MR too (a Secret can go
			// before its MR: a foreground deletion removes it first); if
			// that fails, no POST is made and the Secret's mark goes.
			if err := extclient.MarkAttempt(ctx, e.kube, cr, p.Name); err != nil {
				return nil, errors.Join(err, e.unmark(ctx, cr, marked, prev))
			}
			// NOTE: this POST may make the integration: a silence waited
			// out before it says nothing about what is there after it.
			e.absence.Seen(cr, 0)
			made, err := e.api.CreateIntegration(ctx, teamID, kindOf(p), p.Name)
			if terdut.IsRefused(err) {
				// NOTE: the server made nothing: the Secret goes back to
				// what it held, with no attempt left to look for (a
				// deletion would take an integration made by hand since
				// for this create's).
				return nil, errors.Join(err, e.unmark(ctx, cr, marked, prev), extclient.UnmarkAttempt(ctx, e.kube, cr))
			}
			return made, err
		},
		ID:        func(in *terdut.Integration) int64 { return in.ID },
		CreatedAt: func(in *terdut.Integration) time.Time { return in.CreatedAt },
		Note:      fmt.Sprintf("; its url and key are usable only if Secret %q already holds them", secretName(cr)),
	})
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	e.absence.Done(cr)
	if adopted {
		extclient.SetExternalID(cr, in.ID)
		return managed.ExternalCreation{}, nil
	}
	if err := e.keep(ctx, cr, teamID, in, s); err != nil {
		return managed.ExternalCreation{}, err
	}
	switch {
	case old != nil:
		e.record.Event(cr, event.Warning(extclient.ReasonKeyRotated, errors.Errorf(msgKeyRotated, old.Kind, in.Kind, old.ID, in.ID, secretName(cr))))
	case hadOld && gone != in.ID:
		// NOTE: the CR wins, so the integration is made again; but every
		// sender holding the old key now fails, and that must be said.
		e.record.Event(cr, event.Warning(extclient.ReasonKeyRotated, errors.Errorf(msgRecreated, gone, in.ID, secretName(cr))))
		cr.Status.AtProvider.ReplacedIDs = extclient.Replaced(cr.Status.AtProvider.ReplacedIDs, gone)
	}
	extclient.SetExternalID(cr, in.ID)
	return managed.ExternalCreation{ConnectionDetails: details(in)}, nil
}

// observeLost is Observe for an MR being deleted that recorded no
// integration: when its Secret shows a create whose result was lost (marked
// "creating", or holding the key of an integration the MR did not record),
// that integration is looked for with fresh reads (a list's silence waited
// out as for any integration) and, if it is this MR's own, deleted like a
// recorded one instead of left on the server with a working key. One of that
// name another MR holds, or one made before this MR or its create, stays.
func (e *external) observeLost(ctx context.Context, cr *v1alpha1.Integration) (managed.ExternalObservation, error) {
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, 0)
	if err != nil {
		return managed.ExternalObservation{}, nil //nolint:nilerr // No team was resolved, so no create reached the server.
	}
	s, err := e.secret(ctx, e.read(), cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	// NOTE: at most an integration of the MR's own name: the name a create
	// was attempted under is a mark anyone who may write the Secret or the
	// MR can forge, so it widens nothing when deleting.
	name := cr.Spec.ForProvider.Name
	var held string
	var marked time.Time
	lost := false
	if s != nil && controlledBy(s, cr) {
		// NOTE: only a Secret this MR controls shows what its creates
		// did; one another object controls (a copied secret name) shows
		// nothing of this MR's.
		held = s.Annotations[AnnotationIntegrationID]
		if m, err := time.Parse(time.RFC3339, s.Annotations[AnnotationCreating]); err == nil && extclient.LostAfter(cr, m) {
			marked, lost = m, true
		}
	}
	if m := extclient.AttemptedAt(cr); !lost && extclient.LostAfter(cr, m) {
		// The Secret is gone (or was rewritten), but the MR's own mark
		// says a create's result was never recorded.
		marked, lost = m, true
	}
	if !lost && (held == "" || held == meta.GetExternalName(cr)) {
		return managed.ExternalObservation{}, nil
	}
	n := extclient.Natural[terdut.Integration]{
		Kind: "integration", Name: name,
		ID:        func(in *terdut.Integration) int64 { return in.ID },
		CreatedAt: func(in *terdut.Integration) time.Time { return in.CreatedAt },
	}
	match := func(in terdut.Integration) bool {
		if lost {
			// A create whose answer was lost: what it made is one of its
			// name, made since it began.
			return in.Name == name
		}
		// The Secret holds a key whose integration the MR never recorded.
		return extclient.FormatID(in.ID) == held
	}
	list, err := e.api.ListIntegrationsFresh(ctx, teamID)
	if terdut.IsNotFound(err) {
		return managed.ExternalObservation{}, nil // the team is gone, and its integrations with it
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errListIntegrations)
	}
	return extclient.ObserveLost(ctx, e.adopter, e.absence, e.kube, cr, n, list, match, marked)
}

// confirmInterrupted: when the Secret shows an earlier create of this MR
// (marked "creating", or holding a key) whose result was not recorded,
// Create reads only fresh lists, and when they show nothing of its name it
// waits (Absence) before it POSTs: a list can omit what exists, and a
// second integration would leave a live key nobody holds.
//
// s is the connection Secret (nil: none). It returns the integration to
// keep (the Secret holds its key), or else the one of the MR's name (or the
// interrupted create's) that the fresh read showed, if any: what Create
// decides on, as a second read may omit it.
func (e *external) confirmInterrupted(ctx context.Context, cr *v1alpha1.Integration, teamID int64, s *corev1.Secret) (kept, seen *terdut.Integration, err error) {
	if s == nil {
		return nil, nil, nil // No Secret: nothing was interrupted.
	}
	// NOTE: interrupted is a create the Secret shows (marked "creating",
	// or holding the key of an integration the MR did not record: a kind
	// change or a re-creation whose result was lost).
	held := s.Annotations[AnnotationIntegrationID]
	if s.Annotations[AnnotationCreating] == "" && (held == "" || held == meta.GetExternalName(cr)) {
		return nil, nil, nil // Nothing was interrupted.
	}
	e.freshLists = true
	match := byName(cr.Spec.ForProvider.Name)
	if held != "" {
		match = func(in terdut.Integration) bool { return extclient.FormatID(in.ID) == held }
	} else if n := s.Annotations[AnnotationCreatingName]; n != "" {
		match = func(in terdut.Integration) bool { return in.Name == n || in.Name == cr.Spec.ForProvider.Name }
	}
	cur, err := e.find(ctx, teamID, match)
	if err != nil {
		return nil, nil, err
	}
	if cur == nil {
		if err := e.absence.MissingByName(cr, "integration", cr.Spec.ForProvider.Name); err != nil {
			return nil, nil, err
		}
		return nil, nil, nil
	}
	if held == extclient.FormatID(cur.ID) {
		return cur, nil, nil
	}
	return nil, cur, nil
}

func byName(name string) func(terdut.Integration) bool {
	return func(in terdut.Integration) bool { return in.Name == name }
}

// mayCreate says whether the MR's management policies let Create run.
func mayCreate(cr *v1alpha1.Integration) bool {
	return credentials.Allows(cr, xpv2.ManagementActionCreate)
}

// Update renames in place; the URL and key stay. (A kind change is a
// replacement, done by Create.)
func (e *external) Update(ctx context.Context, cr *v1alpha1.Integration) (managed.ExternalUpdate, error) {
	id, _, err := extclient.ExternalID(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	return managed.ExternalUpdate{}, errors.Wrap(e.api.RenameIntegration(ctx, teamID, id, cr.Spec.ForProvider.Name), errRenameIntegration)
}

// Delete deletes the integration; one already gone is not an error. The
// connection Secret is garbage collected with the MR.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.Integration) (managed.ExternalDelete, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err != nil || !ok {
		return managed.ExternalDelete{}, err
	}
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if err := e.api.DeleteIntegration(ctx, teamID, id); err != nil && !terdut.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errDeleteIntegration)
	}
	e.absence.Deleted(cr, id)
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the client is cached and shared.
func (e *external) Disconnect(_ context.Context) error { return nil }

func secretName(cr *v1alpha1.Integration) string {
	if r := cr.GetWriteConnectionSecretToReference(); r != nil {
		return r.Name
	}
	return ""
}

func kindOf(p v1alpha1.IntegrationParameters) string {
	if p.Kind == "" {
		return terdut.IntegrationAlertmanager
	}
	return p.Kind
}

// Diff is empty when the server's integration is as the spec wants it.
func Diff(p v1alpha1.IntegrationParameters, cur terdut.Integration) string {
	type state struct{ Kind, Name string }
	return cmp.Diff(state{Kind: kindOf(p), Name: p.Name}, state{Kind: cur.Kind, Name: cur.Name})
}
