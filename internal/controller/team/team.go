// Package team manages terdut-server teams as Team managed resources.
package team

import (
	"context"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
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

const (
	errGetTeam    = "cannot get team"
	errRenameTeam = "cannot rename team"
	errNameTaken  = "cannot rename team: the display name %q belongs to another team on the server"
	errSetGroups  = "cannot set the team's OIDC groups"
	errDeleteTeam = "cannot delete team"
	errCleanup    = "cannot check whether the deleted team's scoped key is removed"
	errRotateKey  = "cannot rotate the team's scoped key"
)

// api is the part of terdut-server's API a Team needs.
type api interface {
	GetTeam(ctx context.Context, teamID int64) (*terdut.Team, error)
	GetTeamByName(ctx context.Context, name string) (*terdut.Team, error)
	CreateTeam(ctx context.Context, name string) (*terdut.Team, error)
	RenameTeam(ctx context.Context, teamID int64, name string) error
	SetOIDCGroups(ctx context.Context, teamID int64, g terdut.OIDCGroups) error
	DeleteTeam(ctx context.Context, teamID int64) error
}

var _ api = (*terdut.Client)(nil)

// Setup adds the Team controller to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	return generic.SetupGated(mgr, o, generic.Kind[*v1alpha1.Team]{
		Object:                    &v1alpha1.Team{},
		External:                  New,
		Credentials:               credentials.InstanceKey[*v1alpha1.Team](),
		Observed:                  func(cr *v1alpha1.Team) int64 { return cr.Status.AtProvider.ID },
		OwnAnnotations:            extclient.AttemptAnnotations(),
		DeterministicExternalName: true,
		Orphaned: func(ctx context.Context, cr *v1alpha1.Team, c *credentials.Conn) error {
			return revokeOrphaned(ctx, cr, c)
		},
	})
}

// revokeOrphaned revokes the scoped key of the team a Team held when the
// Team goes while its management policies leave out Delete: the team stays
// on the server, but its key is the provider's own, and nobody would hold or
// revoke it once the finalizer is gone.
func revokeOrphaned(ctx context.Context, cr *v1alpha1.Team, keys teamKeys) error {
	id := cr.Status.AtProvider.ID
	if id == 0 || extclient.FormatID(id) != meta.GetExternalName(cr) {
		return nil
	}
	return keys.RevokeTeamKey(ctx, id)
}

// teamKeys are the team-scoped keys of a Team's children: the Team rotates
// them, and they go with it.
type teamKeys interface {
	HoldsTeamKey(ctx context.Context, teamID int64) (bool, error)
	RevokeTeamKey(ctx context.Context, teamID int64) error
	TeamKeyState(ctx context.Context, teamID int64) (credentials.TeamKeyState, bool, error)
	RotateTeamKey(ctx context.Context, teamID int64, request string) error
}

// New returns a Team's external client.
func New(d generic.Deps) managed.TypedExternalClient[*v1alpha1.Team] {
	e := &external{api: d.Client, adopter: d.Adopter, absence: d.Absence, kube: d.Kube, now: time.Now}
	if d.Conn != nil {
		e.keys = d.Conn
	}
	return e
}

type external struct {
	api     api
	adopter extclient.Adopter
	// absence confirms that a lookup by name that shows nothing means no
	// team of that name is there (nil: at once).
	absence *extclient.Absence
	// kube marks create attempts on the MR (nil: not marked, tests).
	kube client.Client
	// keys are the team's scoped keys; nil in tests that need none.
	keys teamKeys
	// observed is what Observe read in this reconcile; Update uses it.
	observed *terdut.Team
	// rotate is the rotation request the team's key is due for, set by
	// Observe ("" with rotateDue for an interval's rotation).
	rotate    string
	rotateDue bool
	now       func() time.Time
}

var _ managed.TypedExternalClient[*v1alpha1.Team] = (*external)(nil)

// Observe gets the team by its ID. Only a 404 means it does not exist.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalObservation, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err == nil && !ok && meta.WasDeleted(cr) && extclient.Interrupted(cr) {
		return e.observeLost(ctx, cr)
	}
	if err != nil || !ok {
		return managed.ExternalObservation{}, err
	}
	t, err := e.api.GetTeam(ctx, id)
	if terdut.IsNotFound(err) && meta.WasDeleted(cr) {
		if e.keys != nil {
			// NOTE: Delete removes the team, then its scoped key. If that
			// second step failed, the team is gone but its key is not:
			// report it as still there, so Delete runs again and the
			// finalizer stays until the key is gone too.
			held, herr := e.keys.HoldsTeamKey(ctx, id)
			if herr != nil || held {
				return managed.ExternalObservation{ResourceExists: held, ResourceUpToDate: true}, errors.Wrap(herr, errCleanup)
			}
		}
		if extclient.LostRecreate(cr, extclient.AttemptedAt(cr)) {
			// NOTE: the recorded team is gone, and a create made since
			// (the team deleted outside Kubernetes, made again) lost its
			// answer: what that create made is looked for too.
			return e.observeLost(ctx, cr)
		}
	}
	if terdut.IsNotFound(err) {
		return managed.ExternalObservation{}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetTeam)
	}
	e.observed = t
	prev := cr.Status.AtProvider.PreviousIDs
	cr.Status.AtProvider = Observation(t)
	cr.Status.AtProvider.PreviousIDs = prev
	extclient.Mark(cr, xpv2.Available())
	diff := Diff(cr.Spec.ForProvider, t)
	if err := e.observeKey(ctx, cr, id); err != nil {
		return managed.ExternalObservation{}, err
	}
	if e.rotateDue && !meta.WasDeleted(cr) {
		diff += diffKeyRotation
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff}, nil
}

// observeLost is Observe for a Team being deleted whose last create's
// answer was lost: the team that create may have made, never recorded, is
// looked up by the spec's display name and, if it is this MR's own (no other
// MR holds it, made since that create began), recorded and deleted like a
// recorded one instead of left on the server. A team of that name made
// before stays; a team an interrupted create made under an earlier name (the
// spec renamed, then deleted before the create resumed) stays too. When the
// lookup shows none, the MR lets go once none has shown for the absence
// wait (a lookup's answer can omit what exists).
func (e *external) observeLost(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalObservation, error) {
	name := cr.Spec.ForProvider.DisplayName
	t, err := e.api.GetTeamByName(ctx, name)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetTeam)
	}
	var found []terdut.Team
	if t != nil {
		found = append(found, *t)
	}
	return extclient.ObserveLost(ctx, e.adopter, e.absence, e.kube, cr, natural(name), found, func(terdut.Team) bool { return true }, extclient.AttemptedAt(cr))
}

func natural(name string) extclient.Natural[terdut.Team] {
	return extclient.Natural[terdut.Team]{
		Kind: "team", Name: name,
		ID:        func(t *terdut.Team) int64 { return t.ID },
		CreatedAt: func(t *terdut.Team) time.Time { return t.CreatedAt },
	}
}

const diffKeyRotation = "the team's scoped key is due for rotation (keyRotation)"

// observeKey reports the team's scoped key in status and whether it is due
// for rotation: its interval passed, or a new rotationRequest.
func (e *external) observeKey(ctx context.Context, cr *v1alpha1.Team, id int64) error {
	if e.keys == nil {
		return nil
	}
	st, ok, err := e.keys.TeamKeyState(ctx, id)
	if err != nil || !ok {
		return err
	}
	interval := v1alpha1.DefaultTeamKeyRotation
	request := ""
	if r := cr.Spec.ForProvider.KeyRotation; r != nil {
		if r.Interval != nil {
			interval = r.Interval.Duration
		}
		request = r.RotationRequest
	}
	o := &v1alpha1.TeamKeyObservation{LastRotationRequest: st.Request}
	if !st.MintedAt.IsZero() {
		// NOTE: in seconds, as the API server stores it (an interval may
		// have a fraction): else every poll would write the status anew.
		minted, next := metav1.NewTime(st.MintedAt).Rfc3339Copy(), metav1.NewTime(st.MintedAt.Add(interval)).Rfc3339Copy()
		o.MintedAt, o.NextRotationAt = &minted, &next
	}
	cr.Status.AtProvider.Key = o
	e.rotate = request
	now := time.Now
	if e.now != nil {
		now = e.now
	}
	// NOTE: a key that does not say when it was minted (kept by an older
	// release) is due: rotating it records when.
	e.rotateDue = (request != "" && request != st.Request) || st.MintedAt.IsZero() || !now().Before(st.MintedAt.Add(interval))
	return nil
}

// Create adopts a team of the same name if the server has one, and creates
// one otherwise. A 409 means another caller (or our own earlier, interrupted
// attempt) made it first: adopt it. After an attempt whose answer was lost
// and a rename of the spec, the team that attempt made under the earlier
// name, if it is this MR's own, is adopted (and Update renames it) instead of
// a second team made.
func (e *external) Create(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalCreation, error) {
	name := cr.Spec.ForProvider.DisplayName
	old, hadOld, _ := extclient.ExternalID(cr)
	earlier := ""
	if n := extclient.AttemptedName(cr); extclient.Interrupted(cr) && n != "" && n != name {
		earlier = n
	}
	n := natural(name)
	n.Lookup = func(ctx context.Context) (*terdut.Team, error) {
		t, err := e.api.GetTeamByName(ctx, name)
		if t != nil || err != nil || earlier == "" {
			return t, err
		}
		return e.lostUnder(ctx, cr, earlier)
	}
	n.Create = func(ctx context.Context) (*terdut.Team, error) {
		if err := extclient.MarkAttempt(ctx, e.kube, cr, name); err != nil {
			return nil, err
		}
		t, err := e.api.CreateTeam(ctx, name)
		if terdut.IsRefused(err) && !terdut.IsConflict(err) {
			// NOTE: the server made nothing (a 409 is adopted instead).
			return nil, errors.Join(err, extclient.UnmarkAttempt(ctx, e.kube, cr))
		}
		return t, err
	}
	t, _, err := extclient.AdoptOrCreate(ctx, e.adopter, n)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if hadOld && t.ID != old {
		if err := e.replaced(ctx, cr, old, t.ID); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	extclient.SetExternalID(cr, t.ID)
	return managed.ExternalCreation{}, nil
}

// lostUnder returns the team an interrupted create of cr made under an
// earlier display name, if the server has one that is this MR's own.
func (e *external) lostUnder(ctx context.Context, cr *v1alpha1.Team, earlier string) (*terdut.Team, error) {
	t, err := e.api.GetTeamByName(ctx, earlier)
	if t == nil || err != nil {
		return nil, err
	}
	ours, err := extclient.Ours(ctx, e.adopter, natural(earlier), t, extclient.AttemptedAt(cr))
	if !ours || err != nil {
		return nil, err
	}
	return t, nil
}

const (
	msgRecreated   = "team %d was gone from terdut-server (deleted outside Kubernetes?, and with it its escalation policy, switches and integrations): team %d now holds its place. Children whose teamIdRef names this Team follow it and are made again there; integrations get NEW webhook URLs and keys in their Secrets. Children that set teamId %d by hand must be changed."
	maxPreviousIDs = 10
)

// replaced records that the team this Team held (old) was gone and another
// (id) holds its place: the old team's scoped key goes (its account went
// with the team; its Secret would stay), a Warning says so, and the old ID
// is kept in status for the children to follow.
func (e *external) replaced(ctx context.Context, cr *v1alpha1.Team, old, id int64) error {
	if e.keys != nil {
		if err := e.keys.RevokeTeamKey(ctx, old); err != nil {
			return err
		}
	}
	if e.adopter.Record != nil {
		e.adopter.Record.Event(cr, event.Warning(extclient.ReasonRecreated, errors.Errorf(msgRecreated, old, id, old)))
	}
	prev := append(slices.Clone(cr.Status.AtProvider.PreviousIDs), old)
	cr.Status.AtProvider.PreviousIDs = prev[max(0, len(prev)-maxPreviousIDs):]
	return nil
}

// Update renames the team and sets its OIDC groups, each only if it differs.
func (e *external) Update(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalUpdate, error) {
	id, _, err := extclient.ExternalID(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	cur := e.observed
	if cur == nil {
		if cur, err = e.api.GetTeam(ctx, id); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errGetTeam)
		}
	}
	p := cr.Spec.ForProvider
	if cur.Name != p.DisplayName {
		err := e.api.RenameTeam(ctx, id, p.DisplayName)
		if terdut.IsConflict(err) {
			return managed.ExternalUpdate{}, errors.Errorf(errNameTaken, p.DisplayName)
		}
		if err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errRenameTeam)
		}
	}
	if want := desiredGroups(p); want != nil && *want != groupsOf(cur) {
		if err := e.api.SetOIDCGroups(ctx, id, *want); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errSetGroups)
		}
	}
	if e.rotateDue && e.keys != nil {
		// NOTE: the new key is written in place first, then the old one
		// revoked; a child holding the old one takes the new one from
		// the Secret on its next 401.
		if err := e.keys.RotateTeamKey(ctx, id, e.rotate); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errRotateKey)
		}
	}
	return managed.ExternalUpdate{}, nil
}

// Delete deletes the team. A team already gone is not an error; anything
// else is, and keeps the finalizer.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalDelete, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err != nil || !ok {
		return managed.ExternalDelete{}, err
	}
	if err := e.api.DeleteTeam(ctx, id); err != nil && !terdut.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errDeleteTeam)
	}
	// NOTE: the team is gone, so its scoped service account goes too (the
	// server may already have removed it with the team's rows).
	if e.keys != nil {
		if err := e.keys.RevokeTeamKey(ctx, id); err != nil {
			return managed.ExternalDelete{}, err
		}
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the client is cached and shared.
func (e *external) Disconnect(_ context.Context) error { return nil }

// Observation maps a server team to the MR's status.
func Observation(t *terdut.Team) v1alpha1.TeamObservation {
	o := v1alpha1.TeamObservation{
		ID:          t.ID,
		DisplayName: t.Name,
		OIDC:        v1alpha1.TeamOIDC{MemberGroup: t.OIDCMemberGroup, OwnerGroup: t.OIDCOwnerGroup},
	}
	if !t.CreatedAt.IsZero() {
		// NOTE: in seconds, as the API server stores it: with the
		// server's nanoseconds the status never equalled the stored
		// one, and every reconcile of a Team sent a status update that
		// changed nothing (at 5,000 MRs, 2.5 to 4.4 per Team while
		// creating, and one per Team each poll at rest).
		ts := metav1.NewTime(t.CreatedAt).Rfc3339Copy()
		o.CreatedAt = &ts
	}
	return o
}

func groupsOf(t *terdut.Team) terdut.OIDCGroups {
	return terdut.OIDCGroups{MemberGroup: t.OIDCMemberGroup, OwnerGroup: t.OIDCOwnerGroup}
}

// desiredGroups is nil when the spec leaves the OIDC mapping alone.
func desiredGroups(p v1alpha1.TeamParameters) *terdut.OIDCGroups {
	if p.OIDC == nil {
		return nil
	}
	return &terdut.OIDCGroups{MemberGroup: p.OIDC.MemberGroup, OwnerGroup: p.OIDC.OwnerGroup}
}

// Diff is empty when the server's team is as the spec wants it.
func Diff(p v1alpha1.TeamParameters, t *terdut.Team) string {
	type state struct {
		Name   string
		Groups *terdut.OIDCGroups
	}
	want := state{Name: p.DisplayName, Groups: desiredGroups(p)}
	got := state{Name: t.Name}
	if want.Groups != nil {
		g := groupsOf(t)
		got.Groups = &g
	}
	return cmp.Diff(want, got)
}
