package extclient

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

const (
	errRecordLost    = "cannot record on the MR the %s %q its lost create made; nothing was deleted"
	errLookupNatural = "cannot look up %s %q"
	errCreateNatural = "cannot create %s %q"
	errConflictGone  = "the server answered 409 for %s %q, but none of that name can be found"
	msgAdopted       = "Adopted the existing %s %q (ID %d) instead of creating another"
)

// A Natural says how to find one server object by its natural key (a team's
// display name, a switch's name, a service account's name), how to create
// it, and which ID it has.
type Natural[T any] struct {
	// Kind names the object in events and errors, e.g. "team".
	Kind string
	// Name is its natural key.
	Name string
	// Lookup returns the object of that name, or nil when there is none.
	Lookup func(context.Context) (*T, error)
	// Create makes it; a 409 means the name is taken.
	Create func(context.Context) (*T, error)
	// ID is the object's server ID.
	ID func(*T) int64
	// Note is appended to the adoption event.
	Note string
	// Fits refuses an object found by its name that is not what the spec
	// describes (a service account of another scope or team): it is never
	// adopted. Nil accepts any.
	Fits func(*T) error
	// CreatedAt is when the server made the object (zero: it does not
	// say); nil for kinds whose server never says.
	CreatedAt func(*T) time.Time
}

// An Adopter takes over a server object Create found by its natural key,
// unless another MR manages it, and says so in an event on Object.
type Adopter struct {
	// Check refuses an object another MR manages; nil allows all.
	Check Adoptable
	// Record and Object receive the adoption event; nil Record says
	// nothing (a provider-internal object, such as a team key's account).
	Record event.Recorder
	Object runtime.Object
	// Since is when the MR was made: an object found by its natural key
	// that the server made before (less ClockAllowance) cannot be what
	// this MR's own interrupted create made, and is not adopted. Zero
	// adopts any.
	Since time.Time
}

// ClockAllowance is how far the server's clock may be behind the API
// server's when the server says when it made an object.
const ClockAllowance = time.Minute

// errMadeBefore: a Create found an object of its name that the server made
// before the MR existed; it is not adopted (ResourceNotOwned).
const errMadeBefore = "%s %q (ID %d) was made on the server at %s, before this managed resource existed (%s): it is not what this resource's own create made, and is not adopted; nothing was written. To manage it, import it: set its ID as the external name (and managementPolicies [Observe] to never write to it); or choose another name"

// AdoptOrCreate is an idempotent create: look the object up by
// its natural key and adopt it (ownership check, event); else create it; a
// 409 means someone (perhaps an interrupted earlier attempt) made it first:
// look it up and check again. adopted says which happened.
func AdoptOrCreate[T any](ctx context.Context, a Adopter, n Natural[T]) (obj *T, adopted bool, err error) {
	if obj, err = n.Lookup(ctx); err != nil {
		return nil, false, errors.Wrapf(err, errLookupNatural, n.Kind, n.Name)
	}
	if obj == nil {
		obj, err = n.Create(ctx)
		if err == nil {
			return obj, false, nil
		}
		if !terdut.IsConflict(err) {
			return nil, false, errors.Wrapf(err, errCreateNatural, n.Kind, n.Name)
		}
		if obj, err = n.Lookup(ctx); err != nil {
			return nil, false, errors.Wrapf(err, errLookupNatural, n.Kind, n.Name)
		}
		if obj == nil {
			return nil, false, errors.Errorf(errConflictGone, n.Kind, n.Name)
		}
	}
	if n.Fits != nil {
		if err := n.Fits(obj); err != nil {
			return nil, false, err
		}
	}
	id := n.ID(obj)
	if err := a.Check.Allowed(ctx, id); err != nil {
		return nil, false, err
	}
	if err := madeHere(a, n, obj, id); err != nil {
		return nil, false, err
	}
	if a.Record != nil {
		a.Record.Event(a.Object, event.Normal(ReasonAdopted, fmt.Sprintf(msgAdopted, n.Kind, n.Name, id)+n.Note))
	}
	return obj, true, nil
}

// FindFirst returns the first item of list that matches, or nil: the lookup
// of objects the server only lists (switches, integrations).
func FindFirst[T any](list []T, match func(T) bool) *T {
	for i := range list {
		if match(list[i]) {
			return &list[i]
		}
	}
	return nil
}

// madeHere refuses an object the server made before the MR existed: adopt
// only what this MR's own interrupted create can have made. A tenant's
// Team named like a team made by hand in the UI must not take it over, and
// deleting the MR must not then delete it.
func madeHere[T any](a Adopter, n Natural[T], obj *T, id int64) error {
	made, before := madeBefore(a, n, obj)
	if !before {
		return nil
	}
	msg := fmt.Sprintf(errMadeBefore, n.Kind, n.Name, id, made.UTC().Format(time.RFC3339), a.Since.UTC().Format(time.RFC3339))
	if mg, ok := a.Object.(resource.Managed); ok {
		return Refuse(mg, ReasonResourceNotOwned, msg)
	}
	return errors.New(msg)
}

// madeBefore reports when the server made obj, and whether that was before
// the MR existed (less the clock allowance).
func madeBefore[T any](a Adopter, n Natural[T], obj *T) (time.Time, bool) {
	if a.Since.IsZero() || n.CreatedAt == nil {
		return time.Time{}, false
	}
	made := n.CreatedAt(obj)
	return made, !made.IsZero() && made.Before(a.Since.Add(-ClockAllowance))
}

// Ours reports whether obj, found by its natural key, may be what this
// MR's own interrupted create made: no other MR holds it, and the server made
// it neither before the MR existed nor before that create began (attempt,
// less the clock allowance; zero: unknown). An MR being deleted deletes such
// an object too; any other it leaves alone. An ownership check that fails
// (rather than refuses) is an error: not knowing is neither "ours" nor
// "gone".
func Ours[T any](ctx context.Context, a Adopter, n Natural[T], obj *T, attempt time.Time) (bool, error) {
	if err := a.Check.Allowed(ctx, n.ID(obj)); err != nil {
		if IsNotOwned(err) {
			return false, nil
		}
		return false, err
	}
	if _, before := madeBefore(a, n, obj); before {
		return false, nil
	}
	if attempt.IsZero() || n.CreatedAt == nil {
		return true, nil
	}
	made := n.CreatedAt(obj)
	return made.IsZero() || !made.Before(attempt.Add(-ClockAllowance)), nil
}

// FindOurs returns, of the items of list that match selects and Ours says
// are this MR's own (attempt as for Ours), the one the server made nearest
// to the attempt, or nil. Two MRs of one name whose creates were both lost
// each find the object their own POST made, whatever order the list is in.
func FindOurs[T any](ctx context.Context, a Adopter, n Natural[T], list []T, match func(T) bool, attempt time.Time) (*T, error) {
	var found *T
	var off time.Duration
	for i := range list {
		if !match(list[i]) {
			continue
		}
		ours, err := Ours(ctx, a, n, &list[i], attempt)
		if err != nil {
			return nil, err
		}
		if !ours {
			continue
		}
		d := distance(n, &list[i], attempt)
		if found == nil || d < off {
			found, off = &list[i], d
		}
	}
	return found, nil
}

// distance is how far from attempt the server made obj; unknown times are
// farthest, so an object with a known time near the attempt wins.
func distance[T any](n Natural[T], obj *T, attempt time.Time) time.Duration {
	if attempt.IsZero() || n.CreatedAt == nil || n.CreatedAt(obj).IsZero() {
		return time.Duration(math.MaxInt64)
	}
	d := n.CreatedAt(obj).Sub(attempt)
	if d < 0 {
		return -d
	}
	return d
}

// ObserveLost is Observe's answer for an MR being deleted after a create
// whose result was lost, given a fresh list of the objects that create may
// have made: the one match selects that is the MR's own (FindOurs) is
// recorded as the MR's, with the create's result now known, and reported to
// exist, so it is deleted by ID; when there is none, the MR lets go only
// once nothing of n's name has been seen for the absence's wait
// (MissingByName).
//
// The record is written to the MR (kube; nil: kept in memory only) before
// anything is deleted: the runtime keeps no annotation Observe sets while an
// MR is deleted, and a search repeated after the delete would take an object
// of the same name made later (by hand, or by nobody's create) for the
// lost create's and delete it too.
func ObserveLost[T any](ctx context.Context, a Adopter, absence *Absence, kube client.Client, mg resource.Managed, n Natural[T], list []T, match func(T) bool, attempt time.Time) (managed.ExternalObservation, error) {
	found, err := FindOurs(ctx, a, n, list, match, attempt)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if found == nil {
		return managed.ExternalObservation{}, absence.MissingByName(mg, n.Kind, n.Name)
	}
	before, _ := mg.DeepCopyObject().(client.Object)
	SetExternalID(mg, n.ID(found))
	// NOTE: after the attempt's mark, whatever another replica's clock said:
	// the lost create is resolved, and no later reconcile searches again.
	resolved := time.Now()
	if !attempt.Before(resolved) {
		resolved = attempt.Add(time.Second)
	}
	meta.SetExternalCreateSucceeded(mg, resolved)
	if kube != nil && before != nil {
		// NOTE: only onto the MR this search read: a reconcile that started
		// from a copy older than an earlier record (a cache behind its own
		// writes) must not record, and delete, a second object.
		if err := kube.Patch(ctx, mg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return managed.ExternalObservation{}, errors.Wrapf(err, errRecordLost, n.Kind, n.Name)
		}
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
}

// LostAfter reports whether an attempt marked at t is one whose result the
// MR never recorded: t is after the runtime's external-create-succeeded (both
// are written to the second). An attempt in the same second as a recorded
// success counts as recorded: a deletion then leaves what it cannot tell
// apart rather than delete it.
func LostAfter(mg resource.Object, t time.Time) bool {
	return !t.IsZero() && t.After(meta.GetExternalCreateSucceeded(mg))
}

// LostRecreate reports whether an MR whose recorded object is gone made a
// create since (marked at t) whose result it never recorded: its creates are
// re-creates of that object (Recreates), and t is after the last recorded
// success.
func LostRecreate(mg resource.Object, t time.Time) bool {
	return Recreates(mg) && LostAfter(mg, t)
}
