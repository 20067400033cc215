// Package escalationpolicy manages a terdut-server team's escalation policy
// as an EscalationPolicy managed resource.
package escalationpolicy

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

// ReasonUnknownUser is the Ready=False reason for a username the server does
// not know.
const ReasonUnknownUser xpv2.ConditionReason = "UnknownUser"

const (
	errListUsers    = "cannot list users to resolve usernames"
	errUnknownUsers = "unknown username(s) in escalation targets: %s"
	errUnknownMsg   = "terdut-server has no user named %s: fix the username, or have the user sign in once so the server knows them"
	errGetPolicy    = "cannot get escalation policy"
	errPutPolicy    = "cannot put escalation policy"
	errDeletePolicy = "cannot clear escalation policy"
	errNoTeam       = "spec.forProvider.teamId is not resolved yet"
	errTeamMismatch = "external-name %d does not match spec.forProvider.teamId %d: an EscalationPolicy's external name is its team's ID"
	errNotPrepared  = "the desired policy was not resolved by Observe"
)

// api is the part of terdut-server's API an EscalationPolicy needs.
type api interface {
	ListUsers(ctx context.Context) ([]terdut.User, error)
	GetEscalationPolicy(ctx context.Context, teamID int64) (*terdut.EscalationPolicy, error)
	PutEscalationPolicy(ctx context.Context, teamID int64, p terdut.EscalationPolicy) error
}

var _ api = (*terdut.Client)(nil)

// Setup adds the EscalationPolicy controller to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	return generic.SetupGated(mgr, o, generic.ChildOfTeam(generic.Kind[*v1alpha1.EscalationPolicy]{
		Object:   &v1alpha1.EscalationPolicy{},
		External: New,
		// Its external name is its team's ID.
		Observed: func(cr *v1alpha1.EscalationPolicy) int64 { return cr.Status.AtProvider.TeamID },
		// The external name is the team ID: a retried Create PUTs the same
		// policy to the same team, so nothing can be duplicated.
		OwnAnnotations:            extclient.AttemptAnnotations(),
		DeterministicExternalName: true,
	}))
}

// New returns an EscalationPolicy's external client.
func New(d generic.Deps) managed.TypedExternalClient[*v1alpha1.EscalationPolicy] {
	return &external{api: d.Client, adoptable: d.Adopter.Check, kube: d.Kube}
}

type external struct {
	api       api
	adoptable extclient.Adoptable
	// kube marks create attempts on the MR (nil: not marked, tests).
	kube client.Client
	// desired is the spec with usernames resolved, set by Observe.
	desired *terdut.EscalationPolicy
}

var _ managed.TypedExternalClient[*v1alpha1.EscalationPolicy] = (*external)(nil)

// Observe resolves the spec's usernames (every reconcile, so a rename on the
// server is picked up) and compares the desired policy with the server's.
// The policy "exists" while it is not the empty policy.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.EscalationPolicy) (managed.ExternalObservation, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if meta.WasDeleted(cr) {
		// NOTE: a policy being deleted needs no usernames: an unknown user
		// must not block its removal.
		if !ok {
			return e.observeLost(ctx, cr)
		}
		if !ownTeam(cr, id) {
			if extclient.LostRecreate(cr, extclient.AttemptedAt(cr)) {
				// NOTE: its teamId followed its Team to a team made in
				// the old one's place, and the PUT there lost its
				// answer: that policy may be this MR's to empty.
				return e.observeLost(ctx, cr)
			}
			return managed.ExternalObservation{}, nil
		}
		cur, err := e.get(ctx, id)
		return managed.ExternalObservation{ResourceExists: cur != nil, ResourceUpToDate: true}, err
	}

	users, err := e.api.ListUsers(ctx)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errListUsers)
	}
	desired, resolved, unknown := Resolve(cr.Spec.ForProvider, users)
	cr.Status.AtProvider.ResolvedUsers = resolved
	if len(unknown) > 0 {
		names := strings.Join(unknown, ", ")
		extclient.Mark(cr, extclient.Unavailable(ReasonUnknownUser, errors.Errorf(errUnknownMsg, names).Error()))
		return managed.ExternalObservation{}, errors.Errorf(errUnknownUsers, names)
	}
	e.desired = &desired
	if !ok {
		return managed.ExternalObservation{}, nil
	}
	if t := cr.Spec.ForProvider.TeamID; t != nil && *t != id {
		if cr.Status.AtProvider.TeamID == id {
			// NOTE: it observed its policy on team id, and its teamId
			// followed its Team to a team made in the old one's place
			// (the old one, and its policy, are gone): make it there.
			return managed.ExternalObservation{}, nil
		}
		return managed.ExternalObservation{}, errors.Errorf(errTeamMismatch, id, *t)
	}
	cur, err := e.get(ctx, id)
	if err != nil || cur == nil {
		return managed.ExternalObservation{}, err
	}
	cr.Status.AtProvider = Observation(id, cur, users, resolved)
	extclient.Mark(cr, xpv2.Available())
	diff := Diff(desired, *cur)
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff}, nil
}

// observeLost is Observe for a policy being deleted that recorded no team:
// when its last create's PUT was marked (right before it was sent) after its
// last recorded success, that PUT may have been written and its answer lost. The team's policy is then
// this MR's to empty only if no other MR holds it and it is exactly what this
// MR writes (its usernames resolved now); any other policy (one the PUT never
// replaced, one set by hand since) stays.
func (e *external) observeLost(ctx context.Context, cr *v1alpha1.EscalationPolicy) (managed.ExternalObservation, error) {
	team, known := generic.TeamOfChild(cr)
	if !known || !extclient.Interrupted(cr) {
		return managed.ExternalObservation{}, nil
	}
	if n := extclient.AttemptedName(cr); n != "" && n != extclient.FormatID(team) {
		// NOTE: that PUT went to another team (the spec's teamId changed
		// since): this team's policy, whatever it holds, is not what it
		// wrote. (The mark only ever narrows: anyone who may edit the MR
		// can write it.)
		return managed.ExternalObservation{}, nil
	}
	if err := e.adoptable.Allowed(ctx, team); err != nil {
		if extclient.IsNotOwned(err) {
			return managed.ExternalObservation{}, nil
		}
		return managed.ExternalObservation{}, err
	}
	cur, err := e.get(ctx, team)
	if err != nil || cur == nil {
		return managed.ExternalObservation{}, err
	}
	users, err := e.api.ListUsers(ctx)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errListUsers)
	}
	desired, _, unknown := Resolve(cr.Spec.ForProvider, users)
	if len(unknown) > 0 || Diff(desired, *cur) != "" {
		return managed.ExternalObservation{}, nil
	}
	extclient.SetExternalID(cr, team)
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
}

// get returns the team's policy, or nil when the team is gone or its policy
// is empty. Any error but a 404 is returned.
func (e *external) get(ctx context.Context, teamID int64) (*terdut.EscalationPolicy, error) {
	cur, err := e.api.GetEscalationPolicy(ctx, teamID)
	if terdut.IsNotFound(err) {
		return nil, nil //nolint:nilnil // A gone team has no policy.
	}
	if err != nil {
		return nil, errors.Wrap(err, errGetPolicy)
	}
	if cur.IsEmpty() {
		return nil, nil //nolint:nilnil // The empty policy is no policy.
	}
	return cur, nil
}

// Create PUTs the whole policy to the team and records the team ID.
func (e *external) Create(ctx context.Context, cr *v1alpha1.EscalationPolicy) (managed.ExternalCreation, error) {
	t := cr.Spec.ForProvider.TeamID
	if t == nil {
		return managed.ExternalCreation{}, errors.New(errNoTeam)
	}
	// NOTE: a team has one policy; another EscalationPolicy managing it
	// already must not be overwritten by this one.
	if err := e.adoptable.Allowed(ctx, *t); err != nil {
		return managed.ExternalCreation{}, err
	}
	// NOTE: marked right before the PUT: if its answer is lost, deleting
	// the MR empties what it wrote (see observeLost).
	if err := extclient.MarkAttempt(ctx, e.kube, cr, extclient.FormatID(*t)); err != nil {
		return managed.ExternalCreation{}, err
	}
	if err := e.put(ctx, *t); err != nil {
		if terdut.IsRefused(err) {
			return managed.ExternalCreation{}, errors.Join(err, extclient.UnmarkAttempt(ctx, e.kube, cr))
		}
		return managed.ExternalCreation{}, err
	}
	extclient.SetExternalID(cr, *t)
	return managed.ExternalCreation{}, nil
}

// Update PUTs the whole policy; Observe only calls for it when it differs.
func (e *external) Update(ctx context.Context, cr *v1alpha1.EscalationPolicy) (managed.ExternalUpdate, error) {
	id, _, err := extclient.ExternalID(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	return managed.ExternalUpdate{}, e.put(ctx, id)
}

func (e *external) put(ctx context.Context, teamID int64) error {
	if e.desired == nil {
		return errors.New(errNotPrepared)
	}
	return errors.Wrap(e.api.PutEscalationPolicy(ctx, teamID, *e.desired), errPutPolicy)
}

// Delete writes the empty policy: the server has no DELETE for it.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.EscalationPolicy) (managed.ExternalDelete, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err != nil || !ok || !ownTeam(cr, id) {
		return managed.ExternalDelete{}, err
	}
	if err := e.api.PutEscalationPolicy(ctx, id, terdut.EscalationPolicy{}); err != nil && !terdut.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errDeletePolicy)
	}
	return managed.ExternalDelete{}, nil
}

// ownTeam reports whether the team id (the external name) is the team the
// MR belongs to: the one the ownership checks proved to be a Team of its
// namespace. Deleting an EscalationPolicy empties only that team's policy;
// an external name set by hand to another team's ID empties nothing.
func ownTeam(cr *v1alpha1.EscalationPolicy, id int64) bool {
	t, ok := generic.TeamOfChild(cr)
	return ok && t == id
}

// Disconnect does nothing: the client is cached and shared.
func (e *external) Disconnect(_ context.Context) error { return nil }

// Resolve maps the spec to the server's policy, resolving usernames to user
// IDs. It returns the usernames it resolved and, sorted, those it could not.
func Resolve(p v1alpha1.EscalationPolicyParameters, users []terdut.User) (terdut.EscalationPolicy, []v1alpha1.ResolvedUser, []string) {
	byName := make(map[string]int64, len(users))
	for _, u := range users {
		byName[u.Username] = u.ID
	}
	out := terdut.EscalationPolicy{RepeatCount: p.RepeatCount, FallbackTopic: p.FallbackTopic, Levels: make([]terdut.EscalationLevel, 0, len(p.Levels))}
	var resolved []v1alpha1.ResolvedUser
	var unknown []string
	for _, l := range p.Levels {
		lvl := terdut.EscalationLevel{Timeout: l.Timeout, Targets: make([]terdut.EscalationTarget, 0, len(l.Targets))}
		for _, tg := range l.Targets {
			t := terdut.EscalationTarget{Kind: tg.Kind}
			if tg.Kind == terdut.TargetUser {
				uid, ok := byName[tg.Username]
				switch {
				case !ok && !slices.Contains(unknown, tg.Username):
					unknown = append(unknown, tg.Username)
				case ok && !slices.ContainsFunc(resolved, func(r v1alpha1.ResolvedUser) bool { return r.Username == tg.Username }):
					resolved = append(resolved, v1alpha1.ResolvedUser{Username: tg.Username, ID: uid})
				}
				t.UserID = &uid
			}
			lvl.Targets = append(lvl.Targets, t)
		}
		out.Levels = append(out.Levels, lvl)
	}
	slices.Sort(unknown)
	return out, resolved, unknown
}

// Observation maps the server's policy to the MR's status.
func Observation(teamID int64, p *terdut.EscalationPolicy, users []terdut.User, resolved []v1alpha1.ResolvedUser) v1alpha1.EscalationPolicyObservation {
	names := make(map[int64]string, len(users))
	for _, u := range users {
		names[u.ID] = u.Username
	}
	o := v1alpha1.EscalationPolicyObservation{TeamID: teamID, RepeatCount: p.RepeatCount, FallbackTopic: p.FallbackTopic, ResolvedUsers: resolved}
	for _, l := range p.Levels {
		ol := v1alpha1.ObservedLevel{Timeout: l.Timeout}
		for _, t := range l.Targets {
			ot := v1alpha1.ObservedTarget{Kind: t.Kind, UserID: t.UserID}
			if t.UserID != nil {
				ot.Username = names[*t.UserID]
			}
			ol.Targets = append(ol.Targets, ot)
			o.TargetCount++
		}
		o.Levels = append(o.Levels, ol)
	}
	return o
}

// normalize makes equal policies compare equal: "5m" and "5m0s" are one
// timeout.
func normalize(p terdut.EscalationPolicy) terdut.EscalationPolicy {
	out := terdut.EscalationPolicy{RepeatCount: p.RepeatCount, FallbackTopic: p.FallbackTopic, Levels: []terdut.EscalationLevel{}}
	for _, l := range p.Levels {
		if d, err := time.ParseDuration(l.Timeout); err == nil {
			l.Timeout = d.String()
		}
		if l.Targets == nil {
			l.Targets = []terdut.EscalationTarget{}
		}
		out.Levels = append(out.Levels, l)
	}
	return out
}

// Diff is empty when the server's policy is the desired one.
func Diff(desired, current terdut.EscalationPolicy) string {
	return cmp.Diff(normalize(desired), normalize(current))
}
