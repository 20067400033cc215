package terdut

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"git.ryuvia.com/niklas/provider-terdut/internal/fair"
)

// A limiter keeps the provider's requests to one server at or below what
// that server asks for. A 429's Retry-After pauses every request to the
// server until then (not only the one refused), and a stated limit
// (headerRateLimitPolicy) caps the rate while the server keeps stating it.
// A server that states nothing is not limited. The stated rate is shared
// between the namespaces whose MRs ask (fair.Share): one namespace's burst
// of requests cannot hold another's back behind it.
type limiter struct {
	mu    sync.Mutex
	rate  limit
	until time.Time
	// stated is when an answer last stated the limit; now is the clock.
	stated time.Time
	now    func() time.Time
	// throttled counts the 429s the server answered.
	throttled int
}

// paceShare is the share of a stated limit the provider uses.
const paceShare = 0.9

// statedLapse is how long a stated limit holds after the last answer that
// stated it, while answers come without one: a server that lifts its limit
// gets the provider's full rate back (after a 429 storm, 1,000 deletions at a
// forgotten 13.5 a second took 143 s instead of 20), and one that states its
// limit only on some answers keeps being paced between them.
const statedLapse = 10 * time.Second

// shareHorizon is how far ahead a namespace's request may book its slot: a
// namespace that comes while another's requests wait sends its first within
// about that (the stated rate is kept for all, so it waits behind the slots
// already booked), and a waiting request asks again at most that often.
const shareHorizon = 100 * time.Millisecond

func newLimiter() *limiter {
	return &limiter{rate: limit{Share: fair.New(0, fair.Options{Horizon: shareHorizon}), limit: rate.Inf}, now: time.Now}
}

// A limit is a Share and the rate it was last set to.
type limit struct {
	*fair.Share

	limit rate.Limit
}

// Limit is the rate the share was last set to.
func (l *limit) Limit() rate.Limit { return l.limit }

// SetLimit sets the share's rate.
func (l *limit) SetLimit(r rate.Limit) {
	l.limit = r
	l.SetRate(float64(r))
}

// Burst is the share's burst: one (evenly spaced).
func (l *limit) Burst() int { return 1 }

// wait blocks until the share has a slot for ctx's tenant.
func (l *limit) wait(ctx context.Context) error {
	for {
		wait, booked := l.Reserve(fair.TenantOf(ctx))
		if wait > 0 {
			if err := sleepCtx(ctx, wait); err != nil {
				return err
			}
		}
		if booked {
			return nil
		}
	}
}

// wait blocks until a request may be sent: after the server's pause (unless
// skipPause) and within its stated rate.
func (l *limiter) wait(ctx context.Context, skipPause bool) error {
	l.mu.Lock()
	pause := time.Until(l.until)
	rl := &l.rate
	l.mu.Unlock()
	if pause > 0 && !skipPause {
		if err := sleepCtx(ctx, pause); err != nil {
			return err
		}
	}
	return rl.wait(ctx)
}

// observe learns from an answer: a stated limit, a 429's pause.
func (l *limiter) observe(h http.Header, code int) {
	limit, stated := parsePolicy(h.Get(headerRateLimitPolicy))
	// NOTE: paced at 90% of what the server states, and with a burst of
	// one (evenly spaced): requests bunched by the network on their way
	// still arrive within the limit in every window of the server's.
	limit *= paceShare
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	switch {
	case stated:
		l.stated = now
		if l.rate.Limit() != limit {
			l.rate.SetLimit(limit)
		}
	case l.rate.Limit() != rate.Inf && now.Sub(l.stated) > statedLapse:
		l.rate.SetLimit(rate.Inf)
	}
	if code == http.StatusTooManyRequests {
		l.throttled++
		if until := now.Add(retryAfter(h.Get("Retry-After"))); until.After(l.until) {
			l.until = until
		}
	}
}

// parsePolicy reads "N;w=S" (N requests per S seconds, S defaulting to 1):
// the first policy of a RateLimit-Policy header.
func parsePolicy(v string) (rate.Limit, bool) {
	first, _, _ := strings.Cut(v, ",")
	parts := strings.Split(strings.TrimSpace(first), ";")
	n, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	if err != nil || !positive(n) {
		return 0, false
	}
	window := 1.0
	for _, p := range parts[1:] {
		if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && k == "w" {
			if w, err := strconv.ParseFloat(val, 64); err == nil && positive(w) {
				window = w
			}
		}
	}
	// NOTE: "NaN", "Inf" and their quotients parse as floats; none is a
	// limit (FuzzHeaders found it).
	if l := n / window; positive(l) {
		return rate.Limit(l), true
	}
	return 0, false
}

// positive reports whether f is a finite number above zero.
func positive(f float64) bool {
	return f > 0 && !math.IsInf(f, 0)
}
