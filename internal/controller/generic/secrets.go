package generic

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// OwnSecret marks s as written by the provider: its cache holds and watches
// only Secrets so marked.
func OwnSecret(s *corev1.Secret) {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[LabelManagedBy] = ManagedBy
}

// OwnSecrets selects, for the manager's cache, only the Secrets the
// provider writes: in a cluster full of other people's Secrets (Helm keeps a
// release in each) it neither holds nor watches theirs.
func OwnSecrets() cache.ByObject {
	return cache.ByObject{Label: labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})}
}

// SecretsPastTheCache wraps the manager's client: a Secret its cache does
// not hold (one the provider did not write, or not yet marked) is read from
// the API server, never taken as absent. A Secret that is there is never
// created again (no AlreadyExists loop), and a connection Secret that holds a
// key is never taken as lost.
func SecretsPastTheCache(cached client.Client, direct client.Reader) client.Client {
	return &pastTheCache{Client: cached, direct: direct}
}

type pastTheCache struct {
	client.Client

	direct client.Reader
}

func (c *pastTheCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if _, secret := obj.(*corev1.Secret); secret && kerrors.IsNotFound(err) {
		return c.direct.Get(ctx, key, obj, opts...)
	}
	return err
}

// CachedOnly is c without its reads past the cache: to it, a Secret the
// cache does not hold is absent. Only for a read whose "absent" is confirmed
// past the cache before anything acts on it (a team's key is minted only
// after such a read).
func CachedOnly(c client.Reader) client.Reader {
	if p, ok := c.(*pastTheCache); ok {
		return p.Client
	}
	return c
}

// WatchedSecrets reads the Secrets provider configs name (credentials, CA
// bundles): each through a watch of that one Secret, started when it is
// first read, so a reconcile costs no request to the API server and a
// rotated key is seen at once. Other objects are read through Fallback.
type WatchedSecrets struct {
	// CoreV1 is the core/v1 client the watches list and watch through.
	CoreV1   corev1client.CoreV1Interface
	Fallback client.Reader
	// Direct reads a Secret whose watch has not caught up in SyncWait (one
	// the provider may not list or watch, for example).
	Direct   client.Reader
	SyncWait time.Duration

	mu      sync.Mutex
	watches map[types.NamespacedName]toolscache.SharedIndexInformer
	stop    chan struct{}
}

// Get reads a Secret from its watch; anything else from Fallback.
func (w *WatchedSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok || w.CoreV1 == nil {
		return w.Fallback.Get(ctx, key, obj, opts...)
	}
	inf := w.watch(key)
	if !inf.HasSynced() && !w.sync(ctx, inf) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return w.Direct.Get(ctx, key, obj, opts...)
	}
	item, exists, err := inf.GetStore().GetByKey(key.Namespace + "/" + key.Name)
	if err != nil {
		return errors.Wrap(err, "cannot read the watched Secret")
	}
	if !exists {
		return kerrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	got, ok := item.(*corev1.Secret)
	if !ok {
		return errors.Errorf("the watch of Secret %s holds a %T", key, item)
	}
	got.DeepCopyInto(s)
	return nil
}

// List lists through Fallback.
func (w *WatchedSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return w.Fallback.List(ctx, list, opts...)
}

// sync waits up to SyncWait (5s) for a new watch's first list.
func (w *WatchedSecrets) sync(ctx context.Context, inf toolscache.SharedIndexInformer) bool {
	wait := w.SyncWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return toolscache.WaitForCacheSync(sctx.Done(), inf.HasSynced)
}

// watch is the running watch of one Secret (by name: a field selector).
func (w *WatchedSecrets) watch(key types.NamespacedName) toolscache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inf, ok := w.watches[key]; ok {
		return inf
	}
	if w.watches == nil {
		w.watches = map[types.NamespacedName]toolscache.SharedIndexInformer{}
		w.stop = make(chan struct{})
	}
	one := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
	}
	lw := toolscache.NewFilteredListWatchFromClient(w.CoreV1.RESTClient(), "secrets", key.Namespace, one)
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, toolscache.Indexers{})
	// NOTE: the watch lives as long as the process: provider configs are
	// few, and their Secrets are read on every reconcile.
	go inf.Run(w.stop)
	w.watches[key] = inf
	return inf
}
