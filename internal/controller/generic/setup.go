package generic

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/schedule"
)

const errStateMetrics = "cannot register the MR state metrics recorder for %s"

// Options are crossplane-runtime's controller options plus what the
// provider's controllers share.
type Options struct {
	controller.Options

	// Budget is when the reconciles run: the reconcile budget, the
	// per-MR backoff and the workers one namespace may hold.
	schedule.Budget

	// Servers is the process's client cache and team-scoped keys.
	Servers *credentials.Servers

	// ManagementPolicies turns spec.managementPolicies on (the default).
	ManagementPolicies bool

	// Namespace is the provider's own namespace.
	Namespace string

	// Indexes registers the cache indexes once per process.
	Indexes *Indexes

	// Naive turns the index lookups off: the benchmark's side-by-side
	// "before", honoured only in a -tags bench build (Owners.Naive).
	Naive bool

	// Checks counts the comparisons with the server; nil counts none.
	Checks *adjust.Checks

	// QuietStatus skips status updates that would change nothing; nil
	// sends every one, as crossplane-runtime does.
	QuietStatus *adjust.QuietStatus

	// AbsenceConfirmation is how long after a list first omits an object
	// its absence is confirmed with a fresh read (see Absence).
	AbsenceConfirmation time.Duration

	// MinPollInterval is the shortest poll an MR's
	// crossplane.io/poll-interval annotation may ask for.
	MinPollInterval time.Duration
}

// PollOptions are how often an MR is polled: every PollInterval, or as its
// crossplane.io/poll-interval annotation asks, but never more often than
// every MinPollInterval.
func (o Options) PollOptions() []managed.ReconcilerOption {
	return []managed.ReconcilerOption{managed.WithPollInterval(o.PollInterval), managed.WithMinPollInterval(o.MinPollInterval)}
}

// ForControllerRuntime are the controller options with the Budget's
// backoff cap and queue (schedule.Budget.Controller).
func (o Options) ForControllerRuntime() ctrlcontroller.Options {
	return o.Controller(o.Options.ForControllerRuntime())
}

// A Kind describes one managed-resource kind to Setup.
type Kind[M resource.ModernManaged] struct {
	// Object is an empty M, the type the controller reconciles. Its
	// GroupVersionKind, the controller's name and the kind's list type
	// follow from it (through the manager's scheme).
	Object M
	// External builds the kind's external client for one reconcile.
	External func(Deps) managed.TypedExternalClient[M]
	// OwnAnnotations are annotations the kind's external client writes on
	// the MR itself (marks before a create): a change of them alone does
	// not wake the MR (DesiredStateChanged).
	OwnAnnotations []string
	// DeterministicExternalName lets the reconciler go on after a crash
	// between Create and recording the external name. Set it when Create
	// looks the object up by its natural key before it creates one, so a
	// retried Create adopts rather than duplicates.
	DeterministicExternalName bool
	// OwnsSecrets watches the Secrets the MR controls (its connection
	// Secret), so that losing one is noticed at once.
	OwnsSecrets bool
	// TeamOf returns the team an MR belongs to once known; nil for kinds
	// that belong to no team. That team must be a Team of its namespace.
	TeamOf func(M) (int64, bool)
	// Credentials choose the key the kind talks to the server with.
	Credentials credentials.Credentials[M]
	// Observed is the server ID the MR last observed (its status); it says
	// whether the MR ever saw its object while its namespace was admitted.
	Observed func(M) int64
	// Admit is the kind's own gate, given the provider's namespace; nil
	// for none.
	Admit func(providerNamespace string) Gate[M]
	// TeamRefs are a child's IndexTeamRef values (see TeamRefKeys); nil
	// for kinds that belong to no team.
	TeamRefs func(M) []string
	// ObservedTeam is the team a child last observed its object in (its
	// status); nil for kinds that belong to no team. A child being deleted
	// whose team is no longer that one touches nothing.
	ObservedTeam func(M) int64
	// Orphaned cleans up what is the provider's own when an MR is deleted
	// while its policies leave out Delete (a Team's scoped key), with its
	// provider config's server; nil for none. It runs only for an MR that
	// holds its object.
	Orphaned func(ctx context.Context, mg M, conn *credentials.Conn) error
}

// SetupGated sets the kind's controller up once its CRD is established when
// safe-start gating is on, and at once otherwise.
func SetupGated[M resource.ModernManaged](mgr ctrl.Manager, o Options, k Kind[M]) error {
	if o.Gate == nil {
		return Setup(mgr, o, k)
	}
	t, err := typesOf(mgr.GetScheme(), k.Object)
	if err != nil {
		return err
	}
	// NOTE: a kind that belongs to a team looks Teams up through their
	// cache index: it waits for the Team CRD too.
	depends := []schema.GroupVersionKind{t.gvk}
	if k.TeamOf != nil {
		depends = append(depends, v1alpha1.TeamGroupVersionKind)
	}
	o.Gate.Register(func() {
		go SetupWhenMapped(o.Logger, t.gvk.String(), func() error { return Setup(mgr, o, k) })
	}, depends...)
	return nil
}

// kindTypes are what follows from a kind's Go type: its GroupVersionKind, the
// controller's name and an empty list of it.
type kindTypes struct {
	gvk       schema.GroupVersionKind
	groupKind string
	list      resource.ManagedList
}

// typesOf are obj's types in scheme; its list kind is its kind + "List".
func typesOf(scheme *runtime.Scheme, obj runtime.Object) (kindTypes, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return kindTypes{}, errors.Wrap(err, errKindTypes)
	}
	l, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return kindTypes{}, errors.Wrap(err, errKindTypes)
	}
	list, ok := l.(resource.ManagedList)
	if !ok {
		return kindTypes{}, errors.Errorf("%s: %T is not a list of managed resources", errKindTypes, l)
	}
	return kindTypes{gvk: gvk, groupKind: gvk.GroupKind().String(), list: list}, nil
}

const errKindTypes = "cannot find a managed-resource kind's types in the scheme"

// SetupWhenMapped runs setup, again while it fails because the API
// server's discovery (the manager's REST mapper) does not know a kind yet:
// a CRD a package manager just established may be a few seconds ahead of
// it. Any other error, or one that lasts a minute, is logged with the
// provider's own logger (controller-runtime's is discarded unless --debug).
func SetupWhenMapped(log logging.Logger, what string, setup func() error) {
	var err error
	for wait := 250 * time.Millisecond; ; wait *= 2 {
		if err = setup(); err == nil {
			return
		}
		if !meta.IsNoMatchError(err) || wait > 30*time.Second {
			break
		}
		time.Sleep(wait)
	}
	log.Info("Cannot set up the controller: its kind is not reconciled", "what", what, "error", err.Error())
}

// Setup adds the kind's managed-resource controller to mgr.
func Setup[M resource.ModernManaged](mgr ctrl.Manager, o Options, k Kind[M]) error {
	t, err := typesOf(mgr.GetScheme(), k.Object)
	if err != nil {
		return err
	}
	name := managed.ControllerName(t.groupKind)
	record := NewRecorder(mgr, name)

	// NOTE: the state metrics recorder lists into the list it is given, on
	// its own goroutine: it gets a copy, and every other list is a copy of
	// a template nothing writes to (copying a list while it is filled
	// panicked the provider at 1,000 MRs).
	template := t.list.DeepCopyObject()
	newList := func() resource.ManagedList { return template.DeepCopyObject().(resource.ManagedList) } //nolint:forcetypeassert // A copy of a ManagedList is one.
	if err := setupIndexes(mgr, o.Indexes, k); err != nil {
		return err
	}
	owners := Owners{Kube: mgr.GetClient(), NewList: newList, Kind: t.gvk.Kind, Naive: o.Naive}
	if k.Observed != nil {
		owners.Observed = func(mg resource.Managed) int64 {
			if m, ok := mg.(M); ok {
				return k.Observed(m)
			}
			return 0
		}
	}
	conn := &Connector[M]{
		Kube:        mgr.GetClient(),
		Reader:      mgr.GetAPIReader(),
		Usage:       resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1alpha1.ProviderConfigUsage{}),
		Servers:     o.Servers,
		Record:      record,
		Gates:       gates(mgr.GetClient(), o.Namespace, owners, k),
		Credentials: k.Credentials,
		Owners:      owners,
		External:    k.External,
		Checks:      o.Checks,
		Refusals:    adjust.NewRefusals(),
		Absence:     extclient.NewAbsence(o.AbsenceConfirmation),
		Kind:        t.gvk.Kind,
	}
	opts := []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[M](conn),
		// NOTE: no initializers: the default one sets the external name to
		// metadata.name, but ours is the server's ID, set by Create.
		managed.WithInitializers(),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
	}
	opts = append(opts, o.PollOptions()...)
	opts = append(opts,
		managed.WithRecorder(record),
		managed.WithDeterministicExternalName(k.DeterministicExternalName),
		managed.WithReferenceResolver(References{Reader: mgr.GetClient(), Patch: managed.NewAPISimpleReferenceResolver(mgr.GetClient()), TeamRef: teamRefName(k.TeamRefs)}),
	)
	if o.ManagementPolicies {
		opts = append(opts, managed.WithManagementPolicies())
	}
	if o.Features != nil && o.Features.Enabled(feature.EnableAlphaChangeLogs) && o.ChangeLogOptions != nil {
		opts = append(opts, managed.WithChangeLogger(o.ChangeLogOptions.ChangeLogger))
	}
	if o.MetricOptions != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
		if o.MetricOptions.MRStateMetrics != nil {
			sm := statemetrics.NewMRStateRecorder(adjust.ListsUncopied{Client: mgr.GetClient()}, o.Logger, o.MetricOptions.MRStateMetrics, newList(), o.MetricOptions.PollStateMetricInterval)
			if err := mgr.Add(sm); err != nil {
				return errors.Wrapf(err, errStateMetrics, t.groupKind)
			}
		}
	}

	r := managed.NewReconciler(adjustedManager(mgr, o), resource.ManagedKind(t.gvk), opts...)
	copts, rec := o.Workers(name, o.Options.ForControllerRuntime(), layered(mgr, o, name, r, orphaned(mgr.GetClient(), o.Servers, owners, record, k), k))
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(copts).
		For(k.Object, builder.WithPredicates(adjust.DesiredStateChanged(k.OwnAnnotations...)))
	if k.OwnsSecrets {
		b = b.Owns(&corev1.Secret{})
	}
	b = consentWatches(b, mgr.GetClient(), newList)
	if k.TeamRefs != nil {
		b = teamWatch(b, mgr.GetClient(), newList)
	}
	return b.Complete(rec)
}

// adjustedManager is the manager crossplane-runtime's reconciler is given:
// mgr with the changes to the runtime's writes, innermost first (see
// package adjust). NOTE: the runtime has no option for its connection
// publisher or its status client; a manager whose client changes them is
// the one way in.
func adjustedManager(mgr ctrl.Manager, o Options) ctrl.Manager {
	m := o.QuietStatus.Manager(mgr)   // no status update that changes nothing
	return adjust.NothingToPublish(m) // no empty connection Secret
}

// layered is the kind's reconciler: crossplane-runtime's r with the
// provider's layers around it, innermost first. orphan cleans up after an
// MR removed without Delete (k.Orphaned).
func layered[M resource.ModernManaged](mgr ctrl.Manager, o Options, name string, r reconcile.Reconciler, orphan func(context.Context, M) error, k Kind[M]) reconcile.Reconciler {
	kube := mgr.GetClient()
	newMR := func() M { return k.Object.DeepCopyObject().(M) } //nolint:forcetypeassert // A copy of an M is one.
	atRest := func(ctx context.Context, req reconcile.Request) bool {
		mg := newMR()
		return kube.Get(ctx, req.NamespacedName, mg) == nil && schedule.AtRest(mg)
	}
	rec := r
	if o.QuietStatus != nil {
		rec = adjust.FollowUp{Inner: rec, Cache: kube, New: func() client.Object { return newMR() }} // a new object observed in the same turn
	}
	if k.Orphaned != nil {
		rec = Orphaning[M]{Inner: rec, Kube: kube, New: newMR, Before: orphan} // inside the budget: its reads count as the reconcile's
	}
	rec = o.Limit(name, rec, o.GlobalRateLimiter, atRest) // the reconcile budget, shared between namespaces
	if k.TeamRefs != nil {
		rec = TeamWait[M]{Inner: rec, Kube: kube, New: newMR, Refs: k.TeamRefs, Now: time.Now} // a child waits for its Team outside the budget
	}
	return rec
}

// orphaned runs k.Orphaned for an MR that holds its object (it observed
// it, and no other MR's claim on it ranks first), with its provider
// config's server.
//
// An MR whose provider config or its key is gone (its namespace being
// deleted, say) cannot clean up: it is let go, with a Warning that says what
// is left, rather than held for ever.
func orphaned[M resource.ModernManaged](kube client.Reader, servers *credentials.Servers, owners Owners, record event.Recorder, k Kind[M]) func(context.Context, M) error {
	return func(ctx context.Context, mg M) error {
		if !owners.holds(mg) {
			return nil
		}
		if err := owners.CheckExternalName(ctx, mg); err != nil {
			if extclient.IsNotOwned(err) {
				return nil
			}
			return err
		}
		cfg, err := credentials.ResolveProviderConfig(ctx, kube, mg)
		if err == nil {
			var conn *credentials.Conn
			if conn, err = servers.Conn(ctx, cfg); err == nil {
				err = k.Orphaned(ctx, mg, conn)
			}
		}
		if kerrors.IsNotFound(err) || credentials.IsCredentialsMissing(err) {
			record.Event(mg, event.Warning(reasonCannotCleanUp, errors.Wrap(err, errOrphanCleanup)))
			return nil
		}
		return err
	}
}

const reasonCannotCleanUp event.Reason = "CannotCleanUp"

const errOrphanCleanup = "removed without Delete, but what the provider keeps for it (a team's scoped key) cannot be revoked: its provider config or key is gone. Revoke the team's key account crossplane-team-<id> on the server"

// gates are the kind's gates, in order: consent, ownership, its own.
func gates[M resource.ModernManaged](kube client.Reader, providerNamespace string, owners Owners, k Kind[M]) []Gate[M] {
	g := []Gate[M]{ConsentGate(kube, providerNamespace, k.Observed), OwnershipGate(owners, k.TeamOf, k.ObservedTeam)}
	if k.Admit != nil {
		g = append(g, k.Admit(providerNamespace))
	}
	return g
}

// setupIndexes registers the kind's cache indexes (external name, provider
// config) and, for a kind that belongs to a team, the Teams' external name.
func setupIndexes[M resource.ModernManaged](mgr ctrl.Manager, ix *Indexes, k Kind[M]) error {
	ctx := context.Background()
	if err := ix.Ensure(ctx, mgr, k.Object, IndexExternalName, ExternalNameOf); err != nil {
		return err
	}
	if err := ix.Ensure(ctx, mgr, k.Object, IndexProviderConfig, ProviderConfigOf); err != nil {
		return err
	}
	if k.TeamRefs != nil {
		refs := func(o client.Object) []string {
			if mg, ok := o.(M); ok {
				return k.TeamRefs(mg)
			}
			return nil
		}
		if err := ix.Ensure(ctx, mgr, k.Object, IndexTeamRef, refs); err != nil {
			return err
		}
	}
	if k.TeamOf == nil {
		return nil
	}
	return ix.Ensure(ctx, mgr, &v1alpha1.Team{}, IndexExternalName, ExternalNameOf)
}

// NewRecorder returns an event recorder for the named controller.
// NOTE: crossplane-runtime v2.4.0's event.NewAPIRecorder takes the
// record.EventRecorder of the old events API; move when it takes the new one.
func NewRecorder(mgr ctrl.Manager, name string) event.Recorder {
	return event.NewAPIRecorder(mgr.GetEventRecorderFor(name))
}

// teamRefName is the name of the Team a child's teamIdRef names, read from
// its TeamRefs keys; nil for kinds of no team.
func teamRefName[M resource.ModernManaged](refs func(M) []string) func(resource.Managed) string {
	if refs == nil {
		return nil
	}
	return func(mg resource.Managed) string {
		m, ok := mg.(M)
		if !ok {
			return ""
		}
		return refName(refs(m))
	}
}

// refName is the Team name among a child's TeamRefKeys ("" for none).
func refName(keys []string) string {
	for _, k := range keys {
		if n, ok := strings.CutPrefix(k, "ref:"); ok {
			return n
		}
	}
	return ""
}
