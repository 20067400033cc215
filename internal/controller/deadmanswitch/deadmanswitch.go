// Package deadmanswitch manages a terdut-server team's dead man's switches
// as DeadmanSwitch managed resources.
package deadmanswitch

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

const (
	errListSwitches  = "cannot list dead man's switches"
	errUpdateSwitch  = "cannot update dead man's switch"
	errDeleteSwitch  = "cannot delete dead man's switch"
	errSwitchMissing = "dead man's switch %d is gone"
	msgRecreated     = "dead man's switch %d was gone from terdut-server (deleted outside Kubernetes?); switch %d was created in its place. Whatever refers to the switch by its ID must use the new one."
	defaultSeverity  = "critical"
)

// api is the part of terdut-server's API a DeadmanSwitch needs.
type api interface {
	ListDeadmanSwitches(ctx context.Context, teamID int64) ([]terdut.DeadmanSwitch, error)
	ListDeadmanSwitchesFresh(ctx context.Context, teamID int64) ([]terdut.DeadmanSwitch, error)
	CreateDeadmanSwitch(ctx context.Context, teamID int64, s terdut.DeadmanSwitch) (*terdut.DeadmanSwitch, error)
	UpdateDeadmanSwitch(ctx context.Context, teamID, switchID int64, s terdut.DeadmanSwitch) error
	DeleteDeadmanSwitch(ctx context.Context, teamID, switchID int64) error
}

var _ api = (*terdut.Client)(nil)

// Setup adds the DeadmanSwitch controller to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	return generic.SetupGated(mgr, o, generic.ChildOfTeam(generic.Kind[*v1alpha1.DeadmanSwitch]{
		Object:         &v1alpha1.DeadmanSwitch{},
		External:       New,
		OwnAnnotations: extclient.AttemptAnnotations(),
		Observed:       func(cr *v1alpha1.DeadmanSwitch) int64 { return cr.Status.AtProvider.ID },
		// Create lists the team's switches and adopts one of the same name
		// before it POSTs, so a retried Create cannot duplicate.
		DeterministicExternalName: true,
	}))
}

// New returns a DeadmanSwitch's external client.
func New(d generic.Deps) managed.TypedExternalClient[*v1alpha1.DeadmanSwitch] {
	return &external{api: d.Client, adopter: d.Adopter, record: d.Record, absence: d.Absence, kube: d.Kube}
}

// AnnotationCreateAttempted and AnnotationCreateAttemptedName mark a
// switch's create attempt (see extclient.AnnotationCreateAttempted). The server
// has no unique switch names: a Create that finds the mark and no recorded
// result confirms that nothing of its name is there (a list can omit what
// exists) before it POSTs again.
const (
	AnnotationCreateAttempted     = extclient.AnnotationCreateAttempted
	AnnotationCreateAttemptedName = extclient.AnnotationCreateAttemptedName
)

type external struct {
	api     api
	adopter extclient.Adopter
	record  event.Recorder
	// absence confirms a switch its team's list omits is gone (nil: at
	// once).
	absence *extclient.Absence
	// kube marks create attempts on the MR (nil: not marked, tests).
	kube client.Client
}

var _ managed.TypedExternalClient[*v1alpha1.DeadmanSwitch] = (*external)(nil)

// Observe finds the switch by ID in its team's list (the server has no GET
// for one switch): one request per poll.
func (e *external) Observe(ctx context.Context, cr *v1alpha1.DeadmanSwitch) (managed.ExternalObservation, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err == nil && !ok && meta.WasDeleted(cr) && extclient.Interrupted(cr) {
		return e.observeLost(ctx, cr)
	}
	if err != nil || !ok {
		return managed.ExternalObservation{}, err
	}
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	list, err := e.api.ListDeadmanSwitches(ctx, teamID)
	if terdut.IsNotFound(err) {
		return managed.ExternalObservation{}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errListSwitches)
	}
	byID := func(s terdut.DeadmanSwitch) bool { return s.ID == id }
	cur := extclient.FindFirst(list, byID)
	if cur == nil {
		// NOTE: a list is not a 404: only a fresh read, some time after,
		// that does not show it either means it is gone.
		fresh := func(ctx context.Context) ([]terdut.DeadmanSwitch, error) {
			return e.api.ListDeadmanSwitchesFresh(ctx, teamID)
		}
		if cur, err = extclient.Reread(ctx, e.absence, cr, "dead man's switch", id, fresh, byID, errListSwitches); err != nil {
			return managed.ExternalObservation{}, err
		}
		if cur == nil && meta.WasDeleted(cr) && extclient.LostRecreate(cr, extclient.AttemptedAt(cr)) {
			// NOTE: the recorded switch is gone, and a create made since
			// (the switch deleted outside Kubernetes, made again) lost its
			// answer: what that create made is looked for too.
			return e.observeLost(ctx, cr)
		}
		if cur == nil {
			return managed.ExternalObservation{}, nil
		}
	}
	e.absence.Seen(cr, id)
	replaced := cr.Status.AtProvider.ReplacedIDs
	extclient.Predecessors(e.record, cr, "dead man's switch", replaced, id, func(p int64) bool {
		return extclient.FindFirst(list, func(s terdut.DeadmanSwitch) bool { return s.ID == p }) != nil
	})
	cr.Status.AtProvider = Observation(teamID, cur)
	cr.Status.AtProvider.ReplacedIDs = replaced
	extclient.Mark(cr, xpv2.Available())
	diff := Diff(cr.Spec.ForProvider, *cur)
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff}, nil
}

// observeLost is Observe for an MR being deleted whose last create's answer
// was lost: the switch that create may have made, never recorded, is looked
// for by name with fresh reads (a list's silence waited out as for any
// switch) and, if it is this MR's own, deleted like a recorded one instead
// of left on the server. A switch of that name another MR holds, or one made
// before this MR existed or before that create began, is not its own and
// stays.
//
// Deleting an MR deletes at most a switch of its own name in its own team:
// the name a create was attempted under is an annotation anyone who may edit
// the MR can write, so it widens nothing here. A switch an interrupted create
// made under an earlier name (the spec renamed, then deleted before the
// create resumed) is left on the server, never deleted by guess.
func (e *external) observeLost(ctx context.Context, cr *v1alpha1.DeadmanSwitch) (managed.ExternalObservation, error) {
	p := cr.Spec.ForProvider
	teamID, err := extclient.TeamID(p.TeamID, 0)
	if err != nil {
		return managed.ExternalObservation{}, nil //nolint:nilerr // No team was resolved, so no create reached the server.
	}
	name := EffectiveName(p)
	list, err := e.api.ListDeadmanSwitchesFresh(ctx, teamID)
	if terdut.IsNotFound(err) {
		return managed.ExternalObservation{}, nil // the team is gone, and its switches with it
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errListSwitches)
	}
	n := extclient.Natural[terdut.DeadmanSwitch]{
		Kind: "dead man's switch", Name: name,
		ID:        func(s *terdut.DeadmanSwitch) int64 { return s.ID },
		CreatedAt: func(s *terdut.DeadmanSwitch) time.Time { return s.CreatedAt },
	}
	// NOTE: only a switch made since that create began can be what it
	// made: one made earlier (by hand, or by anyone) stays.
	since := extclient.AttemptedAt(cr)
	return extclient.ObserveLost(ctx, e.adopter, e.absence, e.kube, cr, n, list, func(s terdut.DeadmanSwitch) bool {
		return s.Name == name
	}, since)
}

// Create adopts the team's switch of the same name (an empty spec name
// matches the name the server derives from the matcher), and creates one
// otherwise. The server has no unique switch names, so only the lookup
// before the POST keeps a retried Create from duplicating.
func (e *external) Create(ctx context.Context, cr *v1alpha1.DeadmanSwitch) (managed.ExternalCreation, error) {
	p := cr.Spec.ForProvider
	teamID, err := extclient.TeamID(p.TeamID, 0)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	name := EffectiveName(p)
	old, hadOld, _ := extclient.ExternalID(cr)
	byName := func(s terdut.DeadmanSwitch) bool { return s.Name == name }
	list := e.api.ListDeadmanSwitches
	// seen is what the read that decides an interrupted create showed.
	var seen *terdut.DeadmanSwitch
	if extclient.Interrupted(cr) {
		if n := extclient.AttemptedName(cr); n != "" && n != name {
			byName = func(s terdut.DeadmanSwitch) bool { return s.Name == name || s.Name == n }
		}
		// NOTE: an earlier create's result was lost: only fresh reads,
		// and nothing of its name in them for a while, let it POST.
		list = e.api.ListDeadmanSwitchesFresh
		cur, err := list(ctx, teamID)
		if err != nil {
			return managed.ExternalCreation{}, errors.Wrap(err, errListSwitches)
		}
		if seen = extclient.FindFirst(cur, byName); seen == nil {
			if err := e.absence.MissingByName(cr, "dead man's switch", name); err != nil {
				return managed.ExternalCreation{}, err
			}
		}
	}
	s, adopted, err := extclient.AdoptOrCreate(ctx, e.adopter, extclient.Natural[terdut.DeadmanSwitch]{
		Kind: "dead man's switch", Name: name,
		Lookup: func(ctx context.Context) (*terdut.DeadmanSwitch, error) {
			// NOTE: a switch one read showed exists, whatever the next
			// read says (a list can omit what exists): it is adopted,
			// never made a second time.
			if seen != nil {
				return seen, nil
			}
			l, err := list(ctx, teamID)
			return extclient.FindFirst(l, byName), err
		},
		Create: func(ctx context.Context) (*terdut.DeadmanSwitch, error) {
			if err := extclient.MarkAttempt(ctx, e.kube, cr, name); err != nil {
				return nil, err
			}
			// NOTE: this POST may make the switch: a silence waited out
			// before it says nothing about what is there after it.
			e.absence.Seen(cr, 0)
			made, err := e.api.CreateDeadmanSwitch(ctx, teamID, Desired(p))
			if terdut.IsRefused(err) {
				// NOTE: the server made nothing: no attempt is left to
				// look for (a deletion would take a switch made by hand
				// since for this create's).
				return nil, errors.Join(err, extclient.UnmarkAttempt(ctx, e.kube, cr))
			}
			return made, err
		},
		ID:        func(s *terdut.DeadmanSwitch) int64 { return s.ID },
		CreatedAt: func(s *terdut.DeadmanSwitch) time.Time { return s.CreatedAt },
	})
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if hadOld && !adopted && s.ID != old {
		// NOTE: the CR wins, so the switch is made again; but its ID
		// changes, and that must not go unsaid.
		e.record.Event(cr, event.Warning(extclient.ReasonRecreated, errors.Errorf(msgRecreated, old, s.ID)))
		cr.Status.AtProvider.ReplacedIDs = extclient.Replaced(cr.Status.AtProvider.ReplacedIDs, old)
	}
	e.absence.Done(cr)
	extclient.SetExternalID(cr, s.ID)
	return managed.ExternalCreation{}, nil
}

// Update replaces the switch in place (PUT); its ID stays.
func (e *external) Update(ctx context.Context, cr *v1alpha1.DeadmanSwitch) (managed.ExternalUpdate, error) {
	id, _, err := extclient.ExternalID(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	err = e.api.UpdateDeadmanSwitch(ctx, teamID, id, Desired(cr.Spec.ForProvider))
	if terdut.IsNotFound(err) {
		return managed.ExternalUpdate{}, errors.Errorf(errSwitchMissing, id)
	}
	return managed.ExternalUpdate{}, errors.Wrap(err, errUpdateSwitch)
}

// Delete deletes the switch; one already gone is not an error.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.DeadmanSwitch) (managed.ExternalDelete, error) {
	id, ok, err := extclient.ExternalID(cr)
	if err != nil || !ok {
		return managed.ExternalDelete{}, err
	}
	teamID, err := extclient.TeamID(cr.Spec.ForProvider.TeamID, cr.Status.AtProvider.TeamID)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if err := e.api.DeleteDeadmanSwitch(ctx, teamID, id); err != nil && !terdut.IsNotFound(err) {
		return managed.ExternalDelete{}, errors.Wrap(err, errDeleteSwitch)
	}
	e.absence.Deleted(cr, id)
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the client is cached and shared.
func (e *external) Disconnect(_ context.Context) error { return nil }

// EffectiveName is the switch's name on the server: the spec's, or the one
// the server derives from the matcher when the spec has none.
func EffectiveName(p v1alpha1.DeadmanSwitchParameters) string {
	if p.Name != "" {
		return p.Name
	}
	return terdut.CanonicalMatcher(p.Matcher)
}

// Desired maps the spec to the server's switch. An empty name is sent empty,
// so the server derives it.
func Desired(p v1alpha1.DeadmanSwitchParameters) terdut.DeadmanSwitch {
	sev := p.Severity
	if sev == "" {
		sev = defaultSeverity
	}
	return terdut.DeadmanSwitch{Name: p.Name, Matcher: p.Matcher, Timeout: p.Timeout, Severity: sev}
}

// Observation maps the server's switch to the MR's status.
func Observation(teamID int64, s *terdut.DeadmanSwitch) v1alpha1.DeadmanSwitchObservation {
	return v1alpha1.DeadmanSwitchObservation{ID: s.ID, TeamID: teamID, Name: s.Name, Matcher: s.Matcher, Timeout: s.Timeout, Severity: s.Severity}
}

// Diff is empty when the server's switch is as the spec wants it. Matchers
// compare in canonical form and timeouts as durations.
func Diff(p v1alpha1.DeadmanSwitchParameters, cur terdut.DeadmanSwitch) string {
	want := Desired(p)
	want.Name = EffectiveName(p)
	want.Matcher = terdut.CanonicalMatcher(want.Matcher)
	got := terdut.DeadmanSwitch{Name: cur.Name, Matcher: terdut.CanonicalMatcher(cur.Matcher), Timeout: cur.Timeout, Severity: cur.Severity}
	if extclient.SameDuration(want.Timeout, got.Timeout) {
		got.Timeout = want.Timeout
	}
	return cmp.Diff(want, got)
}
