package generic

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// TeamGrace is how long a new child waits, without a word, for the Team its
// reference names to appear and hold its server object, before the
// reconciler runs and reports what it waits for. Applied with 5,000 MRs,
// the last Teams hold their objects about a minute after the apply.
const TeamGrace = 90 * time.Second

// teamRecheck is the longest a waiting child goes unreconciled: the Team's
// watch (teamWatch) wakes it as soon as the Team turns Ready.
const teamRecheck = 5 * time.Second

// TeamWait holds back a new child (a policy, a switch, an integration) whose
// team reference names a Team of its namespace that is still being created,
// until that Team holds its server object. Run at once, the child would be
// written twice for nothing on its way: a ReconcileError while its
// reference does not resolve, then TeamNotInNamespace while the Team has its
// external name but has not observed its object yet — two status writes, two
// events and a backoff per child, which at 5,000 MRs were the API server's
// time the whole apply waited on. It waits only for a Team that is on its
// way (or not in the cache yet): one that fails (Synced False) or is
// deleted lets the child run and say so, and after TeamGrace every child
// runs whatever its Team does. It reads only the cache and books no share of the budget.
type TeamWait[M resource.ModernManaged] struct {
	Inner reconcile.Reconciler
	Kube  client.Reader
	New   func() M
	Refs  func(M) []string
	Now   func() time.Time
}

// Reconcile runs the inner reconciler unless req waits for its team.
func (w TeamWait[M]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if wait := w.wait(ctx, req); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return w.Inner.Reconcile(ctx, req)
}

// wait is how long req's MR is held back: zero when it may run.
func (w TeamWait[M]) wait(ctx context.Context, req reconcile.Request) time.Duration {
	mg := w.New()
	if err := w.Kube.Get(ctx, req.NamespacedName, mg); err != nil {
		return 0
	}
	left := TeamGrace - w.Now().Sub(mg.GetCreationTimestamp().Time)
	if left <= 0 || meta.WasDeleted(mg) || meta.GetExternalName(mg) != "" {
		return 0
	}
	name := refName(w.Refs(mg))
	if name == "" {
		return 0
	}
	t := &v1alpha1.Team{}
	err := w.Kube.Get(ctx, client.ObjectKey{Namespace: mg.GetNamespace(), Name: name}, t)
	if kerrors.IsNotFound(err) {
		// NOTE: applied together, a child may reach the cache before
		// its Team does.
		return min(left, teamRecheck)
	}
	if err != nil || !onItsWay(t) {
		return 0
	}
	return min(left, teamRecheck)
}

// onItsWay says whether t is being created and not failing: no server
// object held yet, not deleted, not Synced False.
func onItsWay(t *v1alpha1.Team) bool {
	return !teamOwners().holds(t) && !meta.WasDeleted(t) && t.GetCondition(xpv2.TypeSynced).Status != corev1.ConditionFalse
}
