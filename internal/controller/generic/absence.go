package generic

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
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
	m  map[types.UID]missing
}

type missing struct {
	id    int64
	since time.Time
	// last is the latest read that missed it.
	last time.Time
}

// NewAbsence confirms absences after wait (zero: at once).
func NewAbsence(wait time.Duration) *Absence {
	return &Absence{Wait: wait, m: map[types.UID]missing{}}
}

// Missing is called when a list does not show mg's object id (what, e.g.
// "dead man's switch"). It returns nil when the fresh read is due now, and
// otherwise the error Observe answers with meanwhile. A nil Absence
// confirms at once.
func (a *Absence) Missing(mg resource.Managed, what string, id int64) error {
	if a == nil {
		return nil
	}
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.m[mg.GetUID()]
	// NOTE: absence must be seen throughout the wait, not at its two
	// ends: reads more than half of it apart may have missed a time it
	// was listed (a lag, then a second lie), so they start it anew.
	if !ok || m.id != id || now.Sub(m.last) > a.Wait/2 {
		m = missing{id: id, since: now}
	}
	m.last = now
	a.m[mg.GetUID()] = m
	if now.Sub(m.since) >= a.Wait {
		return nil
	}
	return errors.Errorf(errConfirming, what, id, now.Sub(m.since).Round(time.Second), m.since.Add(a.Wait).UTC().Format(time.RFC3339))
}

const errConfirmingNone = "an earlier create of this %s %q may have made it, and a list does not show it: confirming with a fresh read at %s that nothing of that name is there before making it (a list can omit what exists)"

// MissingByName is Missing for an object an earlier, interrupted create of
// mg may have made, looked up by its natural key (name).
func (a *Absence) MissingByName(mg resource.Managed, what, name string) error {
	if a == nil {
		return nil
	}
	if err := a.Missing(mg, what, 0); err != nil {
		a.mu.Lock()
		m := a.m[mg.GetUID()]
		a.mu.Unlock()
		return errors.Errorf(errConfirmingNone, what, name, m.since.Add(a.Wait).UTC().Format(time.RFC3339))
	}
	return nil
}

// Settled forgets mg's confirmation: its object was seen, or its absence
// confirmed.
func (a *Absence) Settled(mg resource.Managed) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, mg.GetUID())
}

// Pending is how many MRs are confirming an absence.
func (a *Absence) Pending() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}

// String describes the confirmation, for logs.
func (a *Absence) String() string { return fmt.Sprintf("absence confirmed after %s", a.Wait) }
