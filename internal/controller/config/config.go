// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it
// counts their users, blocks their deletion while they are in use, and drops
// the cached clients of a config that is gone.
package config

import (
	"context"
	"sync"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

// Setup adds the ProviderConfig and ClusterProviderConfig controllers, once
// their CRDs (and the usages') are established when safe-start gating is on:
// a provider installed by a package manager starts before its CRDs exist.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	if o.Gate == nil {
		return setup(mgr, o)
	}
	o.Gate.Register(func() {
		go generic.SetupWhenMapped(o.Logger, "provider config controllers", func() error { return setup(mgr, o) })
	}, v1alpha1.ProviderConfigGroupVersionKind, v1alpha1.ClusterProviderConfigGroupVersionKind, v1alpha1.ProviderConfigUsageGroupVersionKind)
	return nil
}

func setup(mgr ctrl.Manager, o generic.Options) error {
	for _, k := range []struct {
		groupKind string
		kind      string
		config    resource.ProviderConfigKinds
		object    resource.ProviderConfig
	}{
		{v1alpha1.ProviderConfigGroupKind, v1alpha1.ProviderConfigKind, kinds(v1alpha1.ProviderConfigGroupVersionKind.Kind), &v1alpha1.ProviderConfig{}},
		{v1alpha1.ClusterProviderConfigGroupKind, v1alpha1.ClusterProviderConfigKind, kinds(v1alpha1.ClusterProviderConfigGroupVersionKind.Kind), &v1alpha1.ClusterProviderConfig{}},
	} {
		name := providerconfig.ControllerName(k.groupKind)
		r := providerconfig.NewReconciler(uncopiedLists{mgr}, k.config,
			providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
			providerconfig.WithRecorder(generic.NewRecorder(mgr, name)))
		newObject := func() client.Object {
			return k.object.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a provider config is one.
		}
		f := &Forgetting{Reconciler: r, Kube: mgr.GetClient(), Clients: o.Servers.Clients, Kind: k.kind, NewObject: newObject}
		unguarded := Unguarded(mgr.GetClient(), newObject)
		err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			WithOptions(o.ForControllerRuntime()).
			For(k.object).
			Watches(&v1alpha1.ProviderConfigUsage{}, &resource.EnqueueRequestForProviderConfig{Kind: k.kind}).
			Complete(o.Limit(name, &Coalescing{Reconciler: f, Every: coalesceEvery, Urgent: unguarded}, o.GlobalRateLimiter, nil))
		if err != nil {
			return err
		}
	}
	return nil
}

// uncopiedLists is a manager whose client lists straight from the cache,
// without a copy of each item: the provider config reconciler lists every
// usage of its config to count them (and deletes those without an owner),
// for each usage that changes - at 1,000 MRs its copies were 20% of the
// provider's allocations. It neither keeps nor changes what it lists.
type uncopiedLists struct{ ctrl.Manager }

func (m uncopiedLists) GetClient() client.Client {
	return adjust.ListsUncopied{Client: m.Manager.GetClient()}
}

// Forgetting drops the cached clients of a provider config that is gone
// (its own, its teams' and those of other keys on its server) before it
// hands the request on.
type Forgetting struct {
	reconcile.Reconciler

	Kube      client.Reader
	Clients   *terdut.Cache
	Kind      string
	NewObject func() client.Object
}

// Reconcile implements reconcile.Reconciler.
func (f *Forgetting) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	err := f.Kube.Get(ctx, req.NamespacedName, f.NewObject())
	if kerrors.IsNotFound(err) {
		f.Clients.Forget(credentials.ConfigID(f.Kind, req.Namespace, req.Name))
	}
	return f.Reconciler.Reconcile(ctx, req)
}

// coalesceEvery is how often, at most, one provider config's users are
// counted.
const coalesceEvery = 2 * time.Second

// inUse is the finalizer crossplane-runtime's provider config reconciler
// puts on a config so that it is not deleted while MRs use it.
const inUse = "in-use.crossplane.io"

// Unguarded says whether a provider config is not (yet, or any more) guarded
// by its in-use finalizer: until the first count puts it on, nothing stops
// the config's deletion while MRs use it, and an MR whose config is gone can
// never finish its own deletion (a claim deleted a second after it was made
// left its ServiceAccount stuck so). Such a request is never held back.
func Unguarded(kube client.Reader, newObject func() client.Object) func(context.Context, reconcile.Request) bool {
	return func(ctx context.Context, req reconcile.Request) bool {
		o := newObject()
		if err := kube.Get(ctx, req.NamespacedName, o); err != nil {
			return true
		}
		return !meta.FinalizerExists(o, inUse)
	}
}

// Coalescing hands a request on at most once per Every, and asks for it
// again when that time is up: a provider config is reconciled for every
// change of every usage of it, and 1,000 MRs created at once were 1,000
// counts of 1,000 usages. Its status lags by Every at most. A request
// Urgent says yes to is handed on at once.
type Coalescing struct {
	reconcile.Reconciler

	Every  time.Duration
	Urgent func(context.Context, reconcile.Request) bool
	now    func() time.Time

	mu   sync.Mutex
	last map[reconcile.Request]time.Time
}

// Reconcile implements reconcile.Reconciler.
func (c *Coalescing) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := time.Now()
	if c.now != nil {
		now = c.now()
	}
	c.mu.Lock()
	if c.last == nil {
		c.last = map[reconcile.Request]time.Time{}
	}
	if wait := c.Every - now.Sub(c.last[req]); wait > 0 && (c.Urgent == nil || !c.Urgent(ctx, req)) {
		c.mu.Unlock()
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	for r, t := range c.last {
		if now.Sub(t) >= c.Every {
			delete(c.last, r)
		}
	}
	c.last[req] = now
	c.mu.Unlock()
	return c.Reconciler.Reconcile(ctx, req)
}

// kinds are the provider config kinds for one config kind: both kinds share
// the namespaced ProviderConfigUsage, which lives beside the managed resource.
func kinds(kind string) resource.ProviderConfigKinds {
	return resource.ProviderConfigKinds{
		Config:    v1alpha1.SchemeGroupVersion.WithKind(kind),
		Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
		UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
	}
}
