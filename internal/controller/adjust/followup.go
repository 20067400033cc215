package adjust

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
)

// FollowUpWait is how long FollowUp waits for the cache to hold what the
// creating reconcile wrote before it leaves the observation to the retry
// crossplane-runtime asked for.
const FollowUpWait = time.Second

// A FollowUp observes an MR right after the reconcile that created it, in
// the same turn: crossplane-runtime ends a create by asking to be run again
// (after the per-MR backoff, one second, and then the MR's next slot of the
// reconcile budget, which under a burst of creates is seconds away), and only
// that next reconcile observes the new object and says Available. Run here,
// as soon as the cache holds the create's own write (its external name and
// external-create-succeeded annotation: crossplane-runtime refuses to go on
// past a create it cannot see succeeded), it takes no slot of its own: one
// per create, and each create took one. With QuietStatus's hold, the
// `Creating` status is then never sent: its Available comes first. At
// 5,000 MRs the held `Creating` was superseded for only a fifth of them, and
// each of the others cost the API server a status write.
type FollowUp struct {
	Inner reconcile.Reconciler
	// Cache is what the inner reconciler reads MRs from.
	Cache client.Reader
	// New returns an empty MR of the kind.
	New func() client.Object
	// Wait is how long to wait for the cache (zero: FollowUpWait).
	Wait time.Duration
}

// Reconcile runs the inner reconciler and, if it created the MR's object,
// runs it again once the cache has caught up, and returns what that says.
func (f FollowUp) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &creation{}
	res, err := f.Inner.Reconcile(context.WithValue(ctx, creationKey{}, c), req)
	if err != nil || c.externalName == "" || !f.cached(ctx, req, c) {
		return res, err
	}
	return f.Inner.Reconcile(ctx, req)
}

// cached waits until the cache holds the MR as its create left it (or later),
// and says whether it does.
func (f FollowUp) cached(ctx context.Context, req reconcile.Request, c *creation) bool {
	wait := f.Wait
	if wait <= 0 {
		wait = FollowUpWait
	}
	deadline := time.Now().Add(wait)
	for {
		mg := f.New()
		if err := f.Cache.Get(ctx, req.NamespacedName, mg); err == nil &&
			meta.GetExternalName(mg) == c.externalName &&
			mg.GetAnnotations()[meta.AnnotationKeyExternalCreateSucceeded] == c.succeeded {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// A creation is what a reconcile that created its MR's object wrote: the
// external name and the external-create-succeeded annotation.
type creation struct {
	externalName, succeeded string
}

type creationKey struct{}

// noteCreation records, for a FollowUp around the reconcile of ctx, that obj
// is being given the status crossplane-runtime writes right after a
// successful create.
func noteCreation(ctx context.Context, obj client.Object) {
	c, ok := ctx.Value(creationKey{}).(*creation)
	if !ok || !justCreated(obj) {
		return
	}
	c.externalName = meta.GetExternalName(obj)
	c.succeeded = obj.GetAnnotations()[meta.AnnotationKeyExternalCreateSucceeded]
}
