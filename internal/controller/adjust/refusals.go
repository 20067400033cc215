package adjust

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// A conditioned error says, as a Ready condition, why nothing was done.
type conditioned interface {
	error
	Condition() xpv2.Condition
}

// RefusalHold is how long a refusal Create met is given as the answer to
// Observe before Create is tried again.
const RefusalHold = 30 * time.Second

// Refusals remember, per MR, the refusal its last Create met (a server
// object of its name that is not its to adopt, a server bootstrapped by
// someone else). NOTE: crossplane-runtime sets Ready to Creating after any
// Create error, so a reason set by Create never reached the user; a
// refusal set by Observe (or Connect) stays. For RefusalHold after a
// refusal, and while the MR's spec is unchanged, Observe answers with it
// without asking the server; then Create tries again.
type Refusals struct {
	mu   sync.Mutex
	now  func() time.Time
	hold time.Duration
	m    map[types.UID]refused
}

type refused struct {
	cond       xpv2.Condition
	generation int64
	at         time.Time
}

// NewRefusals returns an empty memory of refusals.
func NewRefusals() *Refusals {
	return NewRefusalsOn(time.Now)
}

// NewRefusalsOn returns an empty memory of refusals whose holds are timed on
// now.
func NewRefusalsOn(now func() time.Time) *Refusals {
	return &Refusals{now: now, hold: RefusalHold, m: map[types.UID]refused{}}
}

// Len is how many MRs are held back by a refusal.
func (r *Refusals) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

func (r *Refusals) remember(mg resource.Managed, c xpv2.Condition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[mg.GetUID()] = refused{cond: c, generation: mg.GetGeneration(), at: r.now()}
}

// held returns the refusal that still holds mg back.
func (r *Refusals) held(mg resource.Managed) (xpv2.Condition, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.m[mg.GetUID()]
	if !ok {
		return xpv2.Condition{}, false
	}
	if f.generation != mg.GetGeneration() || r.now().Sub(f.at) >= r.hold || meta.WasDeleted(mg) {
		delete(r.m, mg.GetUID())
		return xpv2.Condition{}, false
	}
	return f.cond, true
}

// forget drops mg's refusal: its Create went through.
func (r *Refusals) forget(mg resource.Managed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, mg.GetUID())
}

// remembering is an external client whose Create refusals are kept.
type remembering[M resource.Managed] struct {
	managed.TypedExternalClient[M]

	r *Refusals
}

// Remembered is e whose Create refusals r keeps (remembering).
func Remembered[M resource.Managed](r *Refusals, e managed.TypedExternalClient[M]) managed.TypedExternalClient[M] {
	if r == nil {
		return e
	}
	return remembering[M]{TypedExternalClient: e, r: r}
}

func (e remembering[M]) Observe(ctx context.Context, mg M) (managed.ExternalObservation, error) {
	if c, ok := e.r.held(mg); ok {
		extclient.Mark(mg, c)
		return managed.ExternalObservation{}, errors.New(c.Message)
	}
	return e.TypedExternalClient.Observe(ctx, mg)
}

func (e remembering[M]) Create(ctx context.Context, mg M) (managed.ExternalCreation, error) {
	c, err := e.TypedExternalClient.Create(ctx, mg)
	var refusal conditioned
	switch {
	case errors.As(err, &refusal):
		e.r.remember(mg, refusal.Condition())
	case err == nil:
		e.r.forget(mg)
	}
	return c, err
}
