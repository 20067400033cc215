package adjust

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// Checks counts the MRs compared with terdut-server (Observe calls), by kind
// and result: at rest, each MR is checked once per --poll; fewer checks
// than MRs per poll mean --max-reconcile-rate is too low to see drift within
// a poll (docs/performance.md, Sizing).
type Checks struct{ vec *prometheus.CounterVec }

// NewChecks makes the provider_terdut_checks_total counter; register it.
func NewChecks() *Checks {
	return &Checks{vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "provider_terdut_checks_total",
		Help: "Managed resources compared with terdut-server (each Observe), by kind and result (ok or error).",
	}, []string{"kind", "result"})}
}

// Describe implements prometheus.Collector.
func (c *Checks) Describe(ch chan<- *prometheus.Desc) { c.vec.Describe(ch) }

// Collect implements prometheus.Collector.
func (c *Checks) Collect(ch chan<- prometheus.Metric) { c.vec.Collect(ch) }

// counting is an external client whose Observe calls are Counted.
type counting[M resource.Managed] struct {
	managed.TypedExternalClient[M]

	ok, failed prometheus.Counter
}

// Counted wraps e, unless c is nil.
func Counted[M resource.Managed](c *Checks, kind string, e managed.TypedExternalClient[M]) managed.TypedExternalClient[M] {
	if c == nil {
		return e
	}
	return counting[M]{TypedExternalClient: e, ok: c.vec.WithLabelValues(kind, "ok"), failed: c.vec.WithLabelValues(kind, "error")}
}

func (c counting[M]) Observe(ctx context.Context, mg M) (managed.ExternalObservation, error) {
	o, err := c.TypedExternalClient.Observe(ctx, mg)
	if err != nil {
		c.failed.Inc()
	} else {
		c.ok.Inc()
	}
	return o, err
}
