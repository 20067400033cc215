package secretcache

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// LabelManagedBy: ManagedBy marks every Secret the provider writes (team
// keys, checkpoints, connection Secrets): the only Secrets its cache holds
// and watches (see OwnSecret).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "provider-terdut"
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
//
// A watch not read for IdleAfter is stopped (the provider config that named
// its Secret is gone, or names another now), no more than MaxWatches run at
// once, and no more than MaxWatchesPerNamespace of one namespace: a tenant's
// namespaced provider configs, however many names they come and go with,
// cannot hold watches on the API server without bound, nor every slot. Past
// either bound a Secret is read from the API server on each read (correct,
// one GET each). A watch keeps only the one key of the Secret it was
// started for (GetKey; all of its data for Get): its other keys, labels,
// annotations (kubectl's last-applied copy of the data among them) and
// managed fields are dropped as it arrives.
type WatchedSecrets struct {
	// CoreV1 is the core/v1 client the watches list and watch through.
	CoreV1   corev1client.CoreV1Interface
	Fallback client.Reader
	// Direct reads a Secret whose watch has not caught up in SyncWait (one
	// the provider may not list or watch, for example), and every Secret
	// past MaxWatches.
	Direct   client.Reader
	SyncWait time.Duration
	// IdleAfter is how long a watch runs without a read (30 minutes when
	// zero: an MR reads its provider config's Secret at least every poll).
	IdleAfter time.Duration
	// MaxWatches is how many watches run at most (1,000 when zero).
	MaxWatches int
	// MaxWatchesPerNamespace is how many of them watch Secrets of one
	// namespace at most (50 when zero).
	MaxWatchesPerNamespace int

	// now is time.Now, but for tests.
	now func() time.Time

	mu        sync.Mutex
	watches   map[watchKey]*secretWatch
	lastSweep time.Time
	// inNamespace counts the watches of each namespace.
	inNamespace map[string]int
}

// watchKey names a watch: one Secret, and the one data key it keeps (all of
// them when empty).
type watchKey struct {
	types.NamespacedName

	data string
}

// secretWatch is the watch of one Secret and when it was last read.
type secretWatch struct {
	inf  toolscache.SharedIndexInformer
	stop context.CancelFunc
	read time.Time
}

// Get reads a Secret from its watch; anything else from Fallback.
func (w *WatchedSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok || w.CoreV1 == nil {
		return w.Fallback.Get(ctx, key, obj, opts...)
	}
	return w.get(ctx, watchKey{NamespacedName: key}, s)
}

// GetKey reads one data key of a Secret, through a watch that keeps only
// that key of it: a provider config needs one key of its Secret, and a
// tenant's Secret may be large.
func (w *WatchedSecrets) GetKey(ctx context.Context, key client.ObjectKey, data string) ([]byte, error) {
	s := &corev1.Secret{}
	if w.CoreV1 == nil {
		err := w.Fallback.Get(ctx, key, s)
		return s.Data[data], err
	}
	err := w.get(ctx, watchKey{NamespacedName: key, data: data}, s)
	return s.Data[data], err
}

func (w *WatchedSecrets) get(ctx context.Context, key watchKey, s *corev1.Secret) error {
	inf := w.watch(key) //nolint:contextcheck // The watch outlives the read that starts it: it stops when idle, not with ctx.
	if inf == nil {
		return w.Direct.Get(ctx, key.NamespacedName, s)
	}
	if !inf.HasSynced() && !w.sync(ctx, inf) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return w.Direct.Get(ctx, key.NamespacedName, s)
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
		return errors.Errorf("the watch of Secret %s holds a %T", key.NamespacedName, item)
	}
	got.DeepCopyInto(s)
	return nil
}

// List lists through Fallback.
func (w *WatchedSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return w.Fallback.List(ctx, list, opts...)
}

// Watches is how many Secret watches run.
func (w *WatchedSecrets) Watches() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// Stop stops every watch.
func (w *WatchedSecrets) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, sw := range w.watches {
		sw.stop()
		delete(w.watches, key)
		w.inNamespace[key.Namespace]--
	}
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

// watch is the running watch of one Secret (by name: a field selector),
// started if there is none; nil when MaxWatches run and none is idle.
func (w *WatchedSecrets) watch(key watchKey) toolscache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if w.now != nil {
		now = w.now()
	}
	if sw, ok := w.watches[key]; ok {
		sw.read = now
		return sw.inf
	}
	if w.watches == nil {
		w.watches = map[watchKey]*secretWatch{}
		w.inNamespace = map[string]int{}
	}
	full := func() bool {
		return len(w.watches) >= w.maxWatches() || w.inNamespace[key.Namespace] >= w.maxPerNamespace()
	}
	w.sweep(now, full())
	if full() {
		return nil
	}
	one := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
	}
	secrets := w.CoreV1.Secrets(key.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			one(&o)
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			one(&o)
			return secrets.Watch(ctx, o)
		},
	}
	// NOTE: CoreV1 may say it cannot stream a list (a fake's cannot); the
	// watch then lists and watches as before WatchList.
	inf := toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, w.CoreV1), &corev1.Secret{}, 0, toolscache.Indexers{})
	_ = inf.SetTransform(keep(key.data))
	ctx, stop := context.WithCancel(context.Background())
	go inf.RunWithContext(ctx)
	w.watches[key] = &secretWatch{inf: inf, stop: stop, read: now}
	w.inNamespace[key.Namespace]++
	return inf
}

// keep drops what a watched Secret holds besides its identity and data (the
// one key data, if set): labels, annotations (kubectl's last-applied copy of
// the data among them), managed fields and the other keys.
func keep(data string) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return obj, nil
		}
		s.Labels, s.Annotations, s.ManagedFields = nil, nil, nil
		if data != "" {
			v, ok := s.Data[data]
			s.Data, s.StringData = nil, nil
			if ok {
				s.Data = map[string][]byte{data: v}
			}
		}
		return s, nil
	}
}

// A KeyReader reads one data key of a Secret (WatchedSecrets).
type KeyReader interface {
	GetKey(ctx context.Context, key client.ObjectKey, data string) ([]byte, error)
}

// SecretKey reads one data key of a Secret through r: only that key is kept
// when r is a KeyReader.
func SecretKey(ctx context.Context, r client.Reader, key client.ObjectKey, data string) ([]byte, error) {
	if k, ok := r.(KeyReader); ok {
		return k.GetKey(ctx, key, data)
	}
	s := &corev1.Secret{}
	if err := r.Get(ctx, key, s); err != nil {
		return nil, err
	}
	return s.Data[data], nil
}

// sweep stops the watches not read for IdleAfter: at most once per
// IdleAfter/10, unless full (a new Secret would otherwise get no watch).
func (w *WatchedSecrets) sweep(now time.Time, full bool) {
	idle := w.IdleAfter
	if idle <= 0 {
		idle = 30 * time.Minute
	}
	if !full && now.Sub(w.lastSweep) < idle/10 {
		return
	}
	w.lastSweep = now
	for key, sw := range w.watches {
		if now.Sub(sw.read) >= idle {
			sw.stop()
			delete(w.watches, key)
			w.inNamespace[key.Namespace]--
		}
	}
}

func (w *WatchedSecrets) maxPerNamespace() int {
	if w.MaxWatchesPerNamespace <= 0 {
		return 50
	}
	return w.MaxWatchesPerNamespace
}

func (w *WatchedSecrets) maxWatches() int {
	if w.MaxWatches <= 0 {
		return 1000
	}
	return w.MaxWatches
}
