// Package serviceaccount manages terdut service accounts and their keys as
// ServiceAccount managed resources, including the self-registration of a
// fresh server (bootstrap, in bootstrap.go) and key rotation (in keys.go).
package serviceaccount

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// ReasonBootstrapStateLost is the Ready=False reason of a server that is
// bootstrapped while neither a credential nor the checkpoint of the admin key
// is left. Fail-closed.
const ReasonBootstrapStateLost xpv2.ConditionReason = "BootstrapStateLost"

// Keys and annotations of the connection Secret and the checkpoint.
const (
	SecretKeyToken    = v1alpha1.ServiceAccountSecretKeyToken
	SecretKeyEndpoint = v1alpha1.ServiceAccountSecretKeyEndpoint

	AnnotationAccountID   = "terdut.ryuvia.com/account-id"
	AnnotationKeyID       = "terdut.ryuvia.com/key-id"
	AnnotationMintedAt    = "terdut.ryuvia.com/key-minted-at"
	AnnotationRequest     = "terdut.ryuvia.com/rotation-request"
	AnnotationRevokeKeyID = "terdut.ryuvia.com/revoke-key-id"
	AnnotationMinting     = "terdut.ryuvia.com/minting-since"
	// AnnotationMintingAccount is the account a mint under way makes its
	// key on: a Create interrupted before the Secret names the account by
	// its key still says which account is this MR's.
	AnnotationMintingAccount = "terdut.ryuvia.com/minting-account-id"
	checkpointSuffix         = "-bootstrap-admin"
	checkpointWriteRetries   = 3
)

const (
	errHealthz       = "waiting for terdut-server to answer /healthz before bootstrapping it"
	errBootstrap     = "cannot bootstrap terdut-server"
	errCheckpoint    = "cannot checkpoint the bootstrap admin key; it is lost"
	errStateLost     = "terdut-server is already bootstrapped (403), and neither a usable credential nor the checkpoint Secret %q is left. Fail-closed: nothing was changed. Recover by recreating the server (a fresh install), or give the provider config a valid instance key."
	errNoCredential  = "no credential to manage service account %q: the provider config's key is missing and bootstrap is not set"
	errLookup        = "cannot look up service account"
	errMint          = "cannot mint a key"
	errRevoke        = "cannot revoke the old key %d"
	errDelete        = "cannot delete service account"
	errSecret        = "cannot read or write Secret %q"
	errNoTeam        = "spec.forProvider.teamId is not resolved yet"
	errDeleteCheckpt = "cannot delete the bootstrap checkpoint Secret %q"
	diffKey          = "the connection Secret needs a new key (missing, rotation due or requested, or an old key to revoke)"
	diffCheckpoint   = "the bootstrap checkpoint (an admin key) is still there"

	reasonRotated      = "RotatedKey"
	reasonStrayKey     = "StrayKey"
	reasonBootstrapped = "Bootstrapped"
)

// api is the part of terdut-server's API a ServiceAccount needs: its
// account, and its keys.
type api interface {
	Healthz(ctx context.Context) error
	Bootstrap(ctx context.Context, r terdut.BootstrapRequest) (*terdut.BootstrapResponse, error)
	ListUsers(ctx context.Context) ([]terdut.User, error)
	CheckKey(ctx context.Context) error
	GetServiceAccountByName(ctx context.Context, name string) (*terdut.ServiceAccount, error)
	CreateServiceAccount(ctx context.Context, sa terdut.ServiceAccount) (*terdut.ServiceAccount, error)
	DeleteServiceAccount(ctx context.Context, accountID int64) error
	keys
}

// keys are the calls on an account's keys, and the bootstrap admin's.
type keys interface {
	MintKey(ctx context.Context, accountID int64) (*terdut.APIKey, error)
	ListKeys(ctx context.Context, accountID int64) ([]terdut.APIKey, error)
	RevokeKey(ctx context.Context, accountID, keyID int64) error
	RevokeUserKey(ctx context.Context, userID, keyID int64) error
}

var _ api = (*terdut.Client)(nil)

// Setup adds the ServiceAccount controller to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	return generic.SetupGated(mgr, o, generic.Kind[*v1alpha1.ServiceAccount]{
		Object:   &v1alpha1.ServiceAccount{},
		External: New,
		// Create looks the account up by name before creating one.
		DeterministicExternalName: true,
		OwnsSecrets:               true,
		// NOTE: its provider config may name the very Secret it writes.
		Credentials: credentials.BootstrapKey[*v1alpha1.ServiceAccount](),
		Observed:    func(cr *v1alpha1.ServiceAccount) int64 { return cr.Status.AtProvider.ID },
		Admit:       instanceScopeAtHome,
		// A team-scoped account's team must be a Team of its namespace: no
		// tenant may mint a key for another's team.
		ObservedTeam: func(cr *v1alpha1.ServiceAccount) int64 { return cr.Status.AtProvider.TeamID },
		TeamOf: func(cr *v1alpha1.ServiceAccount) (int64, bool) {
			if cr.Spec.ForProvider.Scope != terdut.ScopeTeam {
				return 0, false
			}
			return extclient.KnownTeam(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
		},
	})
}

// ReasonInstanceScopeNotPermitted is the Ready=False reason of an
// instance-scoped ServiceAccount outside the provider's namespace.
const ReasonInstanceScopeNotPermitted xpv2.ConditionReason = "InstanceScopeNotPermitted"

const errInstanceScope = "an instance-scoped ServiceAccount may only live in the provider's namespace %q, not %q: its key may manage every team on the server. Use scope team for a team's own key"

// ReasonReservedName is the Ready=False reason of a ServiceAccount whose
// name is the provider's own (the team keys' accounts).
const ReasonReservedName xpv2.ConditionReason = "ReservedName"

const errReservedName = "service account names beginning with %q are the provider's own (each team's key account); choose another name. Nothing was written"

// instanceScopeAtHome refuses an instance-scoped account outside the
// provider's namespace: a tenant must never hold a key for the whole
// server. A team-scoped account's team is checked by the ownership gate.
// No ServiceAccount may take the name of a team key's account.
func instanceScopeAtHome(providerNamespace string) generic.Gate[*v1alpha1.ServiceAccount] {
	return func(_ context.Context, cr *v1alpha1.ServiceAccount, _ credentials.Config) error {
		if strings.HasPrefix(cr.Spec.ForProvider.Name, credentials.TeamAccountPrefix) {
			msg := fmt.Sprintf(errReservedName, credentials.TeamAccountPrefix)
			extclient.Mark(cr, extclient.Unavailable(ReasonReservedName, msg))
			return extclient.Untouchable(errors.New(msg))
		}
		if cr.Spec.ForProvider.Scope != terdut.ScopeInstance || providerNamespace == "" || cr.GetNamespace() == providerNamespace {
			return nil
		}
		msg := fmt.Sprintf(errInstanceScope, providerNamespace, cr.GetNamespace())
		extclient.Mark(cr, extclient.Unavailable(ReasonInstanceScopeNotPermitted, msg))
		return extclient.Untouchable(errors.New(msg))
	}
}

// New returns a ServiceAccount's external client.
func New(d generic.Deps) managed.TypedExternalClient[*v1alpha1.ServiceAccount] {
	e := &external{pc: d.Client, kube: d.Kube, reader: d.Reader, record: d.Record, adopter: d.Adopter, now: time.Now, absence: d.Absence}
	if d.Conn != nil {
		e.endpoint = d.Conn.Endpoint()
		e.pcAuthenticated = d.Conn.Authenticated()
		e.pcKeyIs = d.Conn.KeyIs
		e.withKey = func(purpose string, tok terdut.Secret) (api, error) {
			return d.Conn.WithKey(purpose, tok)
		}
	}
	return e
}

type external struct {
	pc              api
	pcAuthenticated bool
	// pcKeyIs reports whether the provider config's key is the one given.
	pcKeyIs func(terdut.Secret) bool
	// withKey is a client of the same server with another key, cached
	// under purpose.
	withKey  func(purpose string, tok terdut.Secret) (api, error)
	endpoint string
	kube     client.Client
	reader   client.Reader
	record   event.Recorder
	adopter  extclient.Adopter
	now      func() time.Time

	observed *terdut.ServiceAccount
	// absence confirms that an account a lookup by name no longer finds
	// is gone before an MR being deleted lets go of it (nil: at once).
	absence *extclient.Absence
}

var _ managed.TypedExternalClient[*v1alpha1.ServiceAccount] = (*external)(nil)

// purpose names, in the client cache, the client of one key of cr.
func purpose(cr *v1alpha1.ServiceAccount, which string) string {
	return "ServiceAccount/" + cr.GetNamespace() + "/" + cr.GetName() + "/" + which
}

// Observe finds the account by name and checks the key in the connection
// Secret: a missing key, a due or requested rotation, an old key still to
// revoke or a bootstrap checkpoint left behind make it not up to date.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalObservation, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err == nil && !ok && meta.WasDeleted(cr) {
		return e.observeLost(ctx, cr)
	}
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
	died := e.ownKeyDied(cr, ks, err)
	if died {
		sa, err = nil, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errLookup)
	}
	if sa == nil && meta.WasDeleted(cr) && !died {
		// NOTE: a lookup by name that misses the account (a list cut
		// short, an index behind) is no proof it is gone: letting go on
		// its word would leave the account, and its key, on the server.
		if sa, err = e.confirmGone(ctx, c, cr, id); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	if sa == nil || sa.ID != id {
		return e.gone(ctx, cr, id)
	}
	e.absence.Seen(cr, id)
	if err := fits(cr, sa); err != nil {
		// NOTE: a hand-set external name may name an account of this
		// name but of another scope or team (an instance account made by
		// hand, another team's): it is not this MR's. Never mint a key on
		// it, and never delete it: while the MR is deleted it reports
		// only what is its own (a checkpoint), and Delete touches no
		// account it did not observe here.
		if meta.WasDeleted(cr) {
			return e.leftBehind(ctx, cr)
		}
		return managed.ExternalObservation{}, err
	}
	e.observed = sa
	cr.Status.AtProvider = e.observation(cr, sa, ks)
	extclient.Mark(cr, xpv2.Available())
	if meta.WasDeleted(cr) {
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
	}
	diff := ""
	switch {
	case ks.token == "" || ks.accountID != sa.ID || ks.revokeID != 0 || e.rotationDue(cr, ks):
		diff = diffKey
	default:
		// An admin key must not linger once the account's own key is in
		// place: Update deletes the checkpoint an interrupted bootstrap
		// left behind.
		cp, err := e.checkpoint(ctx, e.kube, cr)
		if err != nil {
			return managed.ExternalObservation{}, err
		}
		if cp != nil {
			diff = diffCheckpoint
		}
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff, ConnectionDetails: e.details(ks.token)}, nil
}

// observeLost is Observe for an MR being deleted that recorded no account:
// its Create may have been interrupted after the server made the account and
// a key was minted into its connection Secret, or after a bootstrap left its
// checkpoint (an admin key). The account that Secret names (only a Secret
// this MR controls: one another object controls shows nothing of this MR's)
// is this MR's to delete as a recorded one, if no other MR holds it and it
// is of the spec's name, scope and team (Observe checks); a checkpoint left
// behind goes too.
func (e *external) observeLost(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalObservation, error) {
	id, err := e.secretAccount(ctx, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if id == 0 {
		return e.leftBehind(ctx, cr)
	}
	return e.observeAccount(ctx, cr, id)
}

// secretAccount is the account the MR's connection Secret names, if the MR
// controls that Secret (one another object controls shows nothing of this
// MR's): the account a mint under way was making a key on first, as the
// newer of the two; else the account its key is of. 0 when none.
func (e *external) secretAccount(ctx context.Context, cr *v1alpha1.ServiceAccount) (int64, error) {
	s, err := secret(ctx, e.reader, cr.GetNamespace(), secretName(cr))
	if err != nil || s == nil {
		return 0, err
	}
	if c := metav1.GetControllerOf(s); c == nil || c.UID != cr.GetUID() {
		return 0, nil
	}
	id, _ := strconv.ParseInt(s.Annotations[AnnotationMintingAccount], 10, 64)
	if id == 0 {
		id, _ = strconv.ParseInt(s.Annotations[AnnotationAccountID], 10, 64)
	}
	return id, nil
}

// observeAccount observes account id as the MR's own for a deletion, if no
// other MR holds it (Observe then checks its name, scope and team).
func (e *external) observeAccount(ctx context.Context, cr *v1alpha1.ServiceAccount, id int64) (managed.ExternalObservation, error) {
	if err := e.adopter.Check.Allowed(ctx, id); err != nil {
		if extclient.IsNotOwned(err) {
			return e.leftBehind(ctx, cr)
		}
		return managed.ExternalObservation{}, err
	}
	extclient.SetExternalID(cr, id)
	return e.Observe(ctx, cr)
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
	works := false
	if ks.token != "" && ks.accountID == sa.ID {
		if works, err = e.works(ctx, cr, ks.token); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	if !works {
		if ks, err = e.mint(ctx, c, cr, sa, ks); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	if err := e.deleteCheckpoint(ctx, cr); err != nil {
		return managed.ExternalCreation{}, err
	}
	extclient.SetExternalID(cr, sa.ID)
	return managed.ExternalCreation{ConnectionDetails: e.details(ks.token)}, nil
}

// account adopts the account of this name or creates it.
func (e *external) account(ctx context.Context, c api, cr *v1alpha1.ServiceAccount) (*terdut.ServiceAccount, error) {
	p := cr.Spec.ForProvider
	want := terdut.ServiceAccount{Name: p.Name, Scope: p.Scope}
	if p.Scope == terdut.ScopeTeam {
		if p.TeamID == nil {
			return nil, errors.New(errNoTeam)
		}
		want.TeamID = p.TeamID
	}
	sa, _, err := extclient.AdoptOrCreate(ctx, e.adopter, extclient.Natural[terdut.ServiceAccount]{
		Kind: "service account", Name: p.Name,
		Lookup: func(ctx context.Context) (*terdut.ServiceAccount, error) {
			return c.GetServiceAccountByName(ctx, p.Name)
		},
		Create: func(ctx context.Context) (*terdut.ServiceAccount, error) { return c.CreateServiceAccount(ctx, want) },
		ID:     func(sa *terdut.ServiceAccount) int64 { return sa.ID },
		Fits:   func(sa *terdut.ServiceAccount) error { return fits(cr, sa) },
	})
	return sa, err
}

const errNotFit = "service account %q on the server has scope %q%s, but this ServiceAccount asks for scope %q%s: it is not this ServiceAccount's account, and no key is minted on it; nothing was written. Choose another name"

// fits refuses an account of the spec's name whose scope or team is not
// the spec's: adopting it would mint a key of another team, or of the whole
// server, into a tenant's Secret.
func fits(cr *v1alpha1.ServiceAccount, sa *terdut.ServiceAccount) error {
	p := cr.Spec.ForProvider
	same := sa.Scope == p.Scope
	if p.Scope == terdut.ScopeTeam {
		same = same && p.TeamID != nil && sa.TeamID != nil && *sa.TeamID == *p.TeamID
	}
	if same {
		return nil
	}
	return extclient.Refuse(cr, extclient.ReasonResourceNotOwned, fmt.Sprintf(errNotFit, sa.Name, sa.Scope, credentials.OfTeam(sa.TeamID), p.Scope, credentials.OfTeam(p.TeamID)))
}

// Update rotates: a new key is minted and written in place first, and only
// then the old key is revoked, so nothing is left without a working key. It
// also deletes a bootstrap checkpoint left behind.
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
		return managed.ExternalUpdate{}, errors.New(errLookup)
	}
	if ks.token == "" || ks.accountID != sa.ID || e.rotationDue(cr, ks) {
		if ks.revokeID != 0 {
			// NOTE: the key an earlier rotation replaced goes before
			// another is minted: the mint notes only the key it replaces
			// as still to revoke, and the earlier one would stay valid.
			if err := e.revokeOld(ctx, cr, sa, ks); err != nil {
				return managed.ExternalUpdate{}, err
			}
			ks.revokeID = 0
		}
		minted, err := e.mint(ctx, c, cr, sa, ks)
		if err != nil {
			return managed.ExternalUpdate{}, err
		}
		e.record.Event(cr, event.Normal(reasonRotated, fmt.Sprintf("Minted key %d and wrote it to Secret %q", minted.keyID, secretName(cr))))
		ks = minted
	}
	if ks.revokeID != 0 {
		if err := e.revokeOld(ctx, cr, sa, ks); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	return managed.ExternalUpdate{ConnectionDetails: e.details(ks.token)}, e.deleteCheckpoint(ctx, cr)
}

// Delete deletes the account Observe found to be this MR's (and so its keys),
// and the bootstrap checkpoint if one is left.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalDelete, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if !ok {
		// NOTE: no account is this MR's; a bootstrap checkpoint it left
		// (Observe reports it) goes.
		return managed.ExternalDelete{}, e.deleteCheckpoint(ctx, cr)
	}
	ks, err := e.keyState(ctx, cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	c, err := e.mustAdmin(ctx, cr, ks)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if e.observed == nil || e.observed.ID != id {
		// NOTE: Observe found no account of this MR's (gone, or one of
		// another scope or team under its external name): only its own
		// checkpoint goes.
		return managed.ExternalDelete{}, e.deleteCheckpoint(ctx, cr)
	}
	err = c.DeleteServiceAccount(ctx, id)
	if err != nil && !terdut.IsNotFound(err) && !e.ownKeyDied(cr, ks, err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errDelete)
	}
	e.absence.Deleted(cr, id)
	if err := e.forgetAccount(ctx, cr, id); err != nil {
		return managed.ExternalDelete{}, err
	}
	return managed.ExternalDelete{}, e.deleteCheckpoint(ctx, cr)
}

// forgetAccount removes the deleted account id from the MR's connection
// Secret, so that an MR that never recorded it (its Create interrupted) does
// not look for it again with a credential that may be gone with it.
func (e *external) forgetAccount(ctx context.Context, cr *v1alpha1.ServiceAccount, id int64) error {
	s, err := secret(ctx, e.reader, cr.GetNamespace(), secretName(cr))
	if err != nil || s == nil {
		return err
	}
	if c := metav1.GetControllerOf(s); c == nil || c.UID != cr.GetUID() {
		return nil
	}
	held := false
	for _, k := range []string{AnnotationAccountID, AnnotationMintingAccount} {
		if s.Annotations[k] == extclient.FormatID(id) {
			delete(s.Annotations, k)
			held = true
		}
	}
	if !held {
		return nil
	}
	return errors.Wrapf(e.kube.Update(ctx, s), errSecret, s.Name)
}

// ownKeyDied reports whether err is the 401 an account's own key gets once
// the account is deleted (the key dies with it, and the provider config may
// name the very Secret that holds it): while deleting, it means the account
// is gone. A 401 to any other key (the provider config's own, revoked) says
// nothing about the account.
func (e *external) ownKeyDied(cr *v1alpha1.ServiceAccount, ks keyState, err error) bool {
	return terdut.IsUnauthorized(err) && meta.WasDeleted(cr) && ks.token != "" && e.adminKeyIs(cr, ks.token)
}

// adminKeyIs reports whether admin talks to the server with key k.
func (e *external) adminKeyIs(cr *v1alpha1.ServiceAccount, k terdut.Secret) bool {
	if e.pcAuthenticated {
		return e.pcKeyIs != nil && e.pcKeyIs(k)
	}
	return cr.Spec.ForProvider.Scope == terdut.ScopeInstance
}

// gone observes the MR's recorded account id gone. While the MR is deleted,
// a create since (the account deleted outside Kubernetes, made again) may
// have lost its answer while its Secret already named the new account: that
// one is this MR's to delete too.
func (e *external) gone(ctx context.Context, cr *v1alpha1.ServiceAccount, id int64) (managed.ExternalObservation, error) {
	if meta.WasDeleted(cr) {
		other, err := e.secretAccount(ctx, cr)
		if err != nil {
			return managed.ExternalObservation{}, err
		}
		if other != 0 && other != id {
			return e.observeAccount(ctx, cr, other)
		}
	}
	return e.leftBehind(ctx, cr)
}

// leftBehind observes an account that is gone. While the MR is deleted, a
// bootstrap checkpoint left behind (an admin key) keeps it "existing", so
// Delete runs again and the finalizer stays until the checkpoint is gone.
func (e *external) leftBehind(ctx context.Context, cr *v1alpha1.ServiceAccount) (managed.ExternalObservation, error) {
	if !meta.WasDeleted(cr) {
		return managed.ExternalObservation{}, nil
	}
	cp, err := e.checkpoint(ctx, e.reader, cr)
	return managed.ExternalObservation{ResourceExists: cp != nil, ResourceUpToDate: true}, err
}

// confirmGone waits out the absence of account id that a lookup by name of
// an MR being deleted missed, then looks again: the account when that look
// finds it, nil once its absence is confirmed.
func (e *external) confirmGone(ctx context.Context, c api, cr *v1alpha1.ServiceAccount, id int64) (*terdut.ServiceAccount, error) {
	if err := e.absence.MissingWhileDeleting(cr, "service account", id); err != nil {
		return nil, err
	}
	sa, err := c.GetServiceAccountByName(ctx, cr.Spec.ForProvider.Name)
	if err != nil {
		return nil, errors.Wrap(err, errLookup)
	}
	if sa == nil {
		e.absence.Confirmed(cr, id)
	}
	return sa, nil
}

// Disconnect does nothing: the client is cached and shared.
func (e *external) Disconnect(_ context.Context) error { return nil }
