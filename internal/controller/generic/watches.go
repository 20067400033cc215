package generic

import (
	"context"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// Cache indexes of the managed resources: ownership and team lookups, and
// the consent watches, find MRs through them instead of listing every MR of
// a kind on each reconcile.
const (
	// IndexExternalName indexes MRs by their external name (a server ID).
	IndexExternalName = "terdut.ryuvia.com/external-name"
	// IndexProviderConfig indexes MRs by "Kind/name" of their provider
	// config.
	IndexProviderConfig = "terdut.ryuvia.com/provider-config"
	// IndexTeamRef indexes a team's children by the team they name:
	// "ref:NAME" for a teamIdRef, "id:ID" for a teamId.
	IndexTeamRef = "terdut.ryuvia.com/team-ref"
)

// TeamRefKeys are a child's IndexTeamRef values.
func TeamRefKeys(ref *xpv2.Reference, id *int64) []string {
	var out []string
	if ref != nil && ref.Name != "" {
		out = append(out, "ref:"+ref.Name)
	}
	if id != nil {
		out = append(out, "id:"+extclient.FormatID(*id))
	}
	return out
}

// teamWatch re-queues a team's children when the Team gets its ID or turns
// Ready: a child waiting for its team reference is reconciled at once,
// rather than after its exponential backoff.
func teamWatch(b *builder.Builder, kube client.Reader, newList func() resource.ManagedList) *builder.Builder {
	changed := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.Team)
			n, ok2 := e.ObjectNew.(*v1alpha1.Team)
			return ok1 && ok2 && (meta.GetExternalName(o) != meta.GetExternalName(n) ||
				o.GetCondition(xpv2.TypeReady).Status != n.GetCondition(xpv2.TypeReady).Status)
		},
	}
	children := func(ctx context.Context, team client.Object) []reconcile.Request {
		out := requests(ctx, kube, newList(), client.InNamespace(team.GetNamespace()), client.MatchingFields{IndexTeamRef: "ref:" + team.GetName()})
		if en := meta.GetExternalName(team); en != "" {
			out = append(out, requests(ctx, kube, newList(), client.InNamespace(team.GetNamespace()), client.MatchingFields{IndexTeamRef: "id:" + en})...)
		}
		return out
	}
	return b.Watches(&v1alpha1.Team{}, handler.EnqueueRequestsFromMapFunc(children), builder.WithPredicates(changed))
}

const errIndex = "cannot index %s by %s"

// ExternalNameOf is the IndexExternalName value of an object.
func ExternalNameOf(o client.Object) []string {
	if en := meta.GetExternalName(o); en != "" {
		return []string{en}
	}
	return nil
}

// ProviderConfigOf is the IndexProviderConfig value of an MR.
func ProviderConfigOf(o client.Object) []string {
	mg, ok := o.(resource.ModernManaged)
	if !ok || mg.GetProviderConfigReference() == nil {
		return nil
	}
	ref := mg.GetProviderConfigReference()
	return []string{ref.Kind + "/" + ref.Name}
}

// Indexes registers each cache index once per process: the children of
// every kind need the Teams' index, and a second registration is an error.
type Indexes struct {
	mu   sync.Mutex
	done map[string]bool
}

// Ensure registers the index field of obj's type with fn, unless it is.
func (ix *Indexes) Ensure(ctx context.Context, mgr ctrl.Manager, obj client.Object, field string, fn client.IndexerFunc) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	key := field + "/" + typeName(obj)
	if ix.done[key] {
		return nil
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, obj, field, fn); err != nil {
		return errors.Wrapf(err, errIndex, typeName(obj), field)
	}
	if ix.done == nil {
		ix.done = map[string]bool{}
	}
	ix.done[key] = true
	return nil
}

func typeName(obj client.Object) string { return fmt.Sprintf("%T", obj) }

// consentWatches re-queue a kind's MRs when their consent may have changed:
// a Namespace's labels (from: Selector) or a ClusterProviderConfig's spec
// (homeNamespace, allowedNamespaces). Revocation then takes effect within
// seconds, not at the next poll.
func consentWatches(b *builder.Builder, kube client.Reader, newList func() resource.ManagedList) *builder.Builder {
	labelsChanged := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
	inNamespace := func(ctx context.Context, ns client.Object) []reconcile.Request {
		return requests(ctx, kube, newList(), client.InNamespace(ns.GetName()))
	}
	usingConfig := func(ctx context.Context, cpc client.Object) []reconcile.Request {
		return requests(ctx, kube, newList(), client.MatchingFields{IndexProviderConfig: v1alpha1.ClusterProviderConfigKind + "/" + cpc.GetName()})
	}
	return b.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(inNamespace), builder.WithPredicates(labelsChanged)).
		Watches(&v1alpha1.ClusterProviderConfig{}, handler.EnqueueRequestsFromMapFunc(usingConfig), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
}

// requests lists MRs (through the cache) as reconcile requests.
func requests(ctx context.Context, kube client.Reader, l resource.ManagedList, opts ...client.ListOption) []reconcile.Request {
	if err := kube.List(ctx, l, opts...); err != nil {
		return nil
	}
	items := l.GetItems()
	out := make([]reconcile.Request, 0, len(items))
	for _, mg := range items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: mg.GetNamespace(), Name: mg.GetName()}})
	}
	return out
}
