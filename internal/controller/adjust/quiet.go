package adjust

import (
	"context"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// QuietStatus keeps crossplane-runtime's managed reconciler from sending a
// status update that would change nothing. The reconciler updates an MR's
// status at the end of every reconcile, and an MR is reconciled about ten
// times on its way to Ready (its own finalizer and annotations, its
// references, its fair-share slot): at 5,000 MRs those unchanged updates
// took more of the API server's CPU than anything else, and the API server,
// not the provider, was what the time to Ready waited on. An update is
// skipped only when the watch cache holds the MR at the very resourceVersion
// being written and with an equal status: the API server would have stored
// nothing. provider_terdut_status_updates_skipped_total counts them.
//
// It also holds back the status crossplane-runtime writes right after a
// create for up to Hold (HoldCreating), and does not send it when the
// object's next status comes first (see held.holdCreating):
// provider_terdut_status_updates_superseded_total counts those.
type QuietStatus struct {
	skipped    prometheus.Counter
	superseded prometheus.Counter
	// Hold is how long a post-create status is held back; 0 sends it at
	// once.
	Hold time.Duration
	held held
}

// NewQuietStatus makes the counters; register it.
func NewQuietStatus() *QuietStatus {
	return &QuietStatus{
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "provider_terdut_status_updates_skipped_total",
			Help: "Managed-resource status updates not sent because the status was unchanged at the same resourceVersion.",
		}),
		superseded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "provider_terdut_status_updates_superseded_total",
			Help: "Managed-resource Creating statuses, written right after a create, not sent because the object's observed status came within the hold.",
		}),
		Hold: HoldCreating,
	}
}

// Describe implements prometheus.Collector.
func (q *QuietStatus) Describe(ch chan<- *prometheus.Desc) {
	q.skipped.Describe(ch)
	q.superseded.Describe(ch)
}

// Collect implements prometheus.Collector.
func (q *QuietStatus) Collect(ch chan<- prometheus.Metric) {
	q.skipped.Collect(ch)
	q.superseded.Collect(ch)
}

// Manager is mgr, its client quiet, unless q is nil.
func (q *QuietStatus) Manager(mgr ctrl.Manager) ctrl.Manager {
	if q == nil {
		return mgr
	}
	return quietManager{Manager: mgr, q: q}
}

type quietManager struct {
	ctrl.Manager

	q *QuietStatus
}

func (m quietManager) GetClient() client.Client {
	return quietClient{Client: m.Manager.GetClient(), q: m.q}
}

type quietClient struct {
	client.Client

	q *QuietStatus
}

func (c quietClient) Status() client.SubResourceWriter {
	return quietWriter{SubResourceWriter: c.Client.Status(), cache: c.Client, q: c.q}
}

type quietWriter struct {
	client.SubResourceWriter

	cache client.Reader
	q     *QuietStatus
}

func (w quietWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if len(opts) > 0 {
		return w.SubResourceWriter.Update(ctx, obj, opts...)
	}
	if w.q.held.supersede(obj) {
		w.q.superseded.Inc()
	}
	noteCreation(ctx, obj)
	//nolint:contextcheck // The held status is sent after the reconcile that held it has ended, and its context with it.
	if w.q.held.holdCreating(obj, w.SubResourceWriter, w.q.Hold) {
		return nil
	}
	if w.unchanged(ctx, obj) {
		w.q.skipped.Inc()
		return nil
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

// unchanged is true when the cache holds obj at its resourceVersion with an
// equal status.
func (w quietWriter) unchanged(ctx context.Context, obj client.Object) bool {
	mine := statusOf(obj)
	if !mine.IsValid() || obj.GetResourceVersion() == "" {
		return false
	}
	cached, ok := obj.DeepCopyObject().(client.Object)
	if !ok || w.cache.Get(ctx, client.ObjectKeyFromObject(obj), cached) != nil {
		return false
	}
	theirs := statusOf(cached)
	return cached.GetResourceVersion() == obj.GetResourceVersion() && theirs.IsValid() &&
		equality.Semantic.DeepEqual(mine.Interface(), theirs.Interface())
}

// statusOf is the Status field of a typed object; invalid if it has none.
func statusOf(obj client.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName("Status")
}
