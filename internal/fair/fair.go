// Package fair shares one rate between tenants (for the provider: the
// namespaces of its managed resources), so that a tenant with thousands of
// requests, or with requests made often, cannot hold back another tenant's.
//
// A Share books each request a slot on its tenant's timeline, whose spacing
// is the whole rate's times the number of tenants asking now (a GCRA per
// tenant): a tenant alone gets the whole rate (and burst); two that ask at
// once get half each, however many requests either has waiting. Reserve
// books no slot further ahead than the horizon, so when a tenant comes, the
// others' slots booked at their old share run out within the horizon. Every
// slot Reserve books is also booked on the whole rate's timeline, so the
// whole rate is never exceeded (a server's stated limit holds however many
// tenants come): a newcomer's first slot may wait behind the others' slots
// already booked, at most about one horizon. Book books however far ahead
// (for a caller that keeps its requests' bookings rather than asking again)
// and on the tenant's timeline only: a newcomer waits for none of the
// others' bookings, and the rate is exceeded while they run out.
package fair

import (
	"math"
	"sync"
	"time"
)

// A Share shares Rate requests a second between tenants.
type Share struct {
	mu sync.Mutex
	// interval is the whole rate's spacing; burst how many may go at once.
	interval time.Duration
	burst    int
	// horizon is how far ahead a slot may be booked; window how long a
	// tenant counts as asking after it last asked.
	horizon time.Duration
	window  time.Duration
	now     func() time.Time
	// whole is the whole rate's theoretical arrival time (Reserve's slots).
	whole time.Time

	tenants map[string]*tenant
}

type tenant struct {
	tat  time.Time
	seen time.Time
}

// Options tune a Share; zero values take the defaults.
type Options struct {
	// Burst is how many requests may go at once after a quiet time
	// (default 1).
	Burst int
	// Horizon is how far ahead a slot is booked at most (default 1s).
	Horizon time.Duration
	// Window is how long an idle tenant is remembered (default three
	// horizons).
	Window time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// New returns a Share of perSecond requests a second. A rate that is not
// positive and finite is not limited: every request goes at once.
func New(perSecond float64, o Options) *Share {
	s := &Share{burst: max(o.Burst, 1), horizon: o.Horizon, window: o.Window, now: o.Now, tenants: map[string]*tenant{}}
	if s.horizon <= 0 {
		s.horizon = time.Second
	}
	if s.window <= 0 {
		s.window = 3 * s.horizon
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.SetRate(perSecond)
	return s
}

// SetRate changes the whole rate; not positive and finite is unlimited.
func (s *Share) SetRate(perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if perSecond <= 0 || math.IsInf(perSecond, 0) || math.IsNaN(perSecond) {
		s.interval = 0
		return
	}
	s.interval = time.Duration(float64(time.Second) / perSecond)
}

// Reserve books the tenant's next slot and says how long until it. If no
// slot is free on the tenant's timeline within the horizon nothing is booked
// (booked is false): ask again after wait. A booked slot also keeps to the
// whole rate, which may put it up to about one horizon further.
func (s *Share) Reserve(name string) (wait time.Duration, booked bool) {
	return s.reserve(name, s.horizon)
}

// Book books the tenant's next slot, however far ahead, and says how long
// until it. For a caller that keeps its requests' bookings (they are not
// asked again): a tenant's slots booked before another tenant came are kept,
// so the whole rate is exceeded while they run out (by half with two
// tenants), and a newcomer waits for none of them.
func (s *Share) Book(name string) time.Duration {
	wait, _ := s.reserve(name, 0)
	return wait
}

// reserve books the tenant's next slot if it is within horizon (any, if
// horizon is zero).
func (s *Share) reserve(name string, horizon time.Duration) (wait time.Duration, booked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interval == 0 {
		return 0, true
	}
	now := s.now()
	t := s.tenants[name]
	if t == nil {
		t = &tenant{}
		s.tenants[name] = t
	}
	t.seen = now
	asking := s.asking(now, t)

	// NOTE: a tenant's spacing is the whole rate's times the tenants
	// asking now; each has the whole burst (after a quiet time, k tenants
	// may send k bursts at once: a short, bounded excess).
	spacing := s.interval * time.Duration(asking)
	slot := latest(now, conformance(t.tat, spacing, s.burst))
	if wait := slot.Sub(now); horizon > 0 && wait > horizon {
		return wait - horizon, false
	}
	if horizon > 0 {
		// NOTE: the tenant's timeline is its share; the whole rate's keeps
		// the sum of the shares within the rate while slots booked at an
		// old share run out (the server counts them all). The horizon is
		// checked on the tenant's timeline only: a newcomer books its
		// first slot behind the others' (and so counts as asking at once)
		// rather than losing every race for the whole rate's next slot.
		slot = latest(slot, conformance(s.whole, s.interval, s.burst))
		s.whole = latest(s.whole, slot).Add(s.interval)
	}
	t.tat = latest(t.tat, slot).Add(spacing)
	return slot.Sub(now), true
}

// asking counts the tenants competing for the rate now: the one asking,
// and those with a slot booked ahead (a tenant that keeps up with what it
// asks for, like one that asks now and then, holds no share from the
// others). Tenants idle for the window and with nothing booked are
// forgotten.
func (s *Share) asking(now time.Time, current *tenant) int {
	n := 0
	for name, t := range s.tenants {
		switch {
		case t == current || t.tat.After(now):
			n++
		case now.Sub(t.seen) > s.window:
			delete(s.tenants, name)
		}
	}
	return max(n, 1)
}

// conformance is the earliest time a request conforms to a GCRA of the
// given spacing and burst whose theoretical arrival time is tat.
func conformance(tat time.Time, spacing time.Duration, burst int) time.Time {
	return tat.Add(-spacing * time.Duration(burst-1))
}

func latest(ts ...time.Time) time.Time {
	l := ts[0]
	for _, t := range ts[1:] {
		if t.After(l) {
			l = t
		}
	}
	return l
}
