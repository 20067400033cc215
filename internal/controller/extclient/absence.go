package extclient

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// DefaultAbsenceConfirmation is how long after a list first omits an
// object its absence is confirmed (--absence-confirmation): longer than a
// list that lags 30 s behind the server's writes.
const DefaultAbsenceConfirmation = 45 * time.Second

const errConfirming = "%s %d was missing from its team's list %s ago: confirming it is gone with a fresh read at %s before anything is made in its place (a list can omit what exists: a lagging replica or cache, a restored backup, a page cut short)"

// Absence confirms that a server object is gone before anything is made in
// its place. terdut-server has no GET for one switch or one integration: an
// MR that holds an ID its team's list does not show first waits (Observe
// answers with an error that says what is being confirmed; nothing is
// created, and the MR is retried within --max-backoff), and after Wait of
// misses no more than Wait/2 apart reads the list afresh, past every shared
// answer. Only an object that fresh read does not show either is gone.
type Absence struct {
	// Wait is how long after the first miss the fresh read is made.
	Wait time.Duration
	// Clock tells the time (nil: time.Now).
	Clock func() time.Time

	mu sync.Mutex
	m  map[absent]missing
	// deleted are the objects whose DELETE the server answered (2xx or
	// 404): only for those may a list's silence end a deletion at once.
	deleted map[absent]bool
}

// absent names what an MR is confirming: its object id, or (0) nothing of
// its name after an interrupted create.
type absent struct {
	uid types.UID
	id  int64
}

type missing struct {
	since time.Time
	// last is the latest read that missed it.
	last time.Time
	// confirmed: a fresh read after the wait did not show it either. It
	// stays gone (no second wait) until it is seen or the MR is Done.
	confirmed bool
}

// NewAbsence confirms absences after wait (zero: at once).
func NewAbsence(wait time.Duration) *Absence {
	return &Absence{Wait: wait, m: map[absent]missing{}, deleted: map[absent]bool{}}
}

func (a *Absence) now() time.Time {
	if a.Clock != nil {
		return a.Clock()
	}
	return time.Now()
}

// due records a miss of k and reports whether the fresh read is due: the
// wait is over, with misses no more than half of it apart (or it was
// confirmed already). Otherwise it returns when the read will be due.
func (a *Absence) due(k absent) (bool, time.Duration, time.Time) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.m[k]
	if ok && m.confirmed {
		return true, 0, time.Time{}
	}
	// NOTE: absence must be seen throughout the wait, not at its two
	// ends: reads more than half of it apart may have missed a time it
	// was listed (a lag, then a second lie), so they start it anew.
	if !ok || now.Sub(m.last) > a.Wait/2 {
		m = missing{since: now}
	}
	m.last = now
	a.m[k] = m
	return now.Sub(m.since) >= a.Wait, now.Sub(m.since), m.since.Add(a.Wait)
}

// Missing is called when a list does not show mg's object id (what, e.g.
// "dead man's switch"). It returns nil when the fresh read is due now, and
// otherwise the error Observe answers with meanwhile. The caller then says
// what the fresh read found: Seen or Confirmed. A nil Absence confirms at
// once.
func (a *Absence) Missing(mg resource.Managed, what string, id int64) error {
	if a == nil {
		return nil
	}
	ok, ago, at := a.due(absent{uid: mg.GetUID(), id: id})
	if ok {
		return nil
	}
	return errors.Errorf(errConfirming, what, id, ago.Round(time.Second), at.UTC().Format(time.RFC3339))
}

const errConfirmingNone = "an earlier create of this %s %q may have made it, and a list does not show it: confirming with a fresh read at %s that nothing of that name is there before making it (a list can omit what exists)"

// MissingByName is Missing for an object an earlier, interrupted create of
// mg may have made, looked up by its natural key (name).
func (a *Absence) MissingByName(mg resource.Managed, what, name string) error {
	if a == nil {
		return nil
	}
	ok, _, at := a.due(absent{uid: mg.GetUID()})
	if ok {
		return nil
	}
	return errors.Errorf(errConfirmingNone, what, name, at.UTC().Format(time.RFC3339))
}

// NoneYet is MissingByName for a caller that says itself what it confirms:
// whether the fresh read that confirms nothing is there is due now, and
// otherwise when it will be.
func (a *Absence) NoneYet(mg resource.Managed) (bool, time.Time) {
	if a == nil {
		return true, time.Time{}
	}
	ok, _, at := a.due(absent{uid: mg.GetUID()})
	return ok, at
}

// Confirmed records that a fresh read after the wait did not show mg's
// object id either: it is gone, and stays so for mg until Done.
func (a *Absence) Confirmed(mg resource.Managed, id int64) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := absent{uid: mg.GetUID(), id: id}
	m := a.m[k]
	m.confirmed = true
	a.m[k] = m
}

// Deleted records that the server answered the DELETE of mg's object id
// (2xx, or 404): a list that no longer shows it is believed at once.
func (a *Absence) Deleted(mg resource.Managed, id int64) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.deleted == nil {
		a.deleted = map[absent]bool{}
	}
	a.deleted[absent{uid: mg.GetUID(), id: id}] = true
}

// MissingWhileDeleting is Missing for an object an MR being deleted no
// longer finds: nil at once when the server answered the MR's DELETE of id,
// otherwise the absence is waited out as for a live MR (a lookup can omit
// what exists, and an MR that let go on its word leaves the object behind).
func (a *Absence) MissingWhileDeleting(mg resource.Managed, what string, id int64) error {
	if a.deleteAnswered(mg, id) {
		return nil
	}
	return a.Missing(mg, what, id)
}

// deleteAnswered reports whether Deleted was recorded for mg's object id. A
// nil Absence (confirm at once) answers true.
func (a *Absence) deleteAnswered(mg resource.Managed, id int64) bool {
	if a == nil {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.deleted[absent{uid: mg.GetUID(), id: id}]
}

// Seen forgets a confirmation of mg's object id (0: by name): it was seen.
func (a *Absence) Seen(mg resource.Managed, id int64) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, absent{uid: mg.GetUID(), id: id})
}

// Done forgets every confirmation of mg: it made (or took) its object.
func (a *Absence) Done(mg resource.Managed) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.m {
		if k.uid == mg.GetUID() {
			delete(a.m, k)
		}
	}
	for k := range a.deleted {
		if k.uid == mg.GetUID() {
			delete(a.deleted, k)
		}
	}
}

// Pending is how many confirmations are under way.
func (a *Absence) Pending() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}

// Reread is what Observe does when its team's list does not show mg's
// object id (what, e.g. "integration"): it waits the absence out (an MR
// being deleted whose DELETE the server answered does not: that DELETE is
// why it is missing), then reads the list afresh with fresh. It returns the
// object when the fresh list shows it, and nil once its absence is
// confirmed; read errors are wrapped with errList, and a 404 (the team gone)
// is an empty list.
func Reread[T any](ctx context.Context, a *Absence, mg resource.Managed, what string, id int64, fresh func(context.Context) ([]T, error), match func(T) bool, errList string) (*T, error) {
	if !meta.WasDeleted(mg) || !a.deleteAnswered(mg, id) {
		if err := a.Missing(mg, what, id); err != nil {
			return nil, err
		}
	}
	list, err := fresh(ctx)
	if err != nil && !terdut.IsNotFound(err) {
		return nil, errors.Wrap(err, errList)
	}
	cur := FindFirst(list, match)
	if cur == nil {
		a.Confirmed(mg, id)
	}
	return cur, nil
}
