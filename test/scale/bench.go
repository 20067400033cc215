package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis"
	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

// A result is what one run measured.
type result struct {
	Shape shape `json:"shape"`
	MRs   int   `json:"mrs"`
	Naive bool  `json:"naive"`

	// ReadySeconds is how long until all were Ready; P50, P95 and Max are
	// per MR (1 s resolution: the Ready condition's transition time).
	ReadySeconds float64 `json:"readySeconds"`
	P50          float64 `json:"readyP50Seconds"`
	P95          float64 `json:"readyP95Seconds"`
	Max          float64 `json:"readyMaxSeconds"`
	// ReconcilesPerSecond while creating.
	ReconcilesPerSecond float64 `json:"reconcilesPerSecond"`
	// CreateRequests are the double's requests by route while creating.
	CreateRequests map[string]int `json:"createRequests"`
	// CreateCPUSeconds are the CPU seconds each process of the machine's
	// control plane (kube-apiserver, etcd) and the provider spent while
	// creating: on two cores, which of them the time to Ready waits on.
	CreateCPUSeconds map[string]float64 `json:"createCPUSeconds"`
	// CreateAPIRequestsPerMR are the API server's requests per MR while
	// creating (everyone's: the bench's creates, the provider's updates and
	// reads, events, Secrets; watches aside), by verb and resource: what the
	// API server's CPU goes to.
	CreateAPIRequestsPerMR map[string]float64 `json:"createAPIRequestsPerMR,omitempty"`

	// At rest, over three polls: requests by route, and per MR per poll.
	RestRequests map[string]int `json:"restRequests"`
	RestPolls    float64        `json:"restPolls"`
	// RestAPIRequestsPerMRPerPoll are the API server's requests per MR per
	// poll at rest (everyone's, watches aside): a status written again
	// that did not change shows here.
	RestAPIRequestsPerMRPerPoll map[string]float64 `json:"restAPIRequestsPerMRPerPoll,omitempty"`
	// ChecksPerMRPerPoll is how often each MR was compared with the server
	// (provider_terdut_checks_total): below 1, drift is not seen every poll.
	ChecksPerMRPerPoll float64 `json:"checksPerMRPerPoll"`
	GETsPerMRPerPoll   float64 `json:"getsPerMRPerPoll"`
	BytesPerMRPerPoll  float64 `json:"bytesPerMRPerPoll"`
	RequestsPerMRPoll  float64 `json:"requestsPerMRPerPoll"`
	ProviderPeakRSSMiB float64 `json:"providerPeakRSSMiB"`
	ProviderCPUSeconds float64 `json:"providerCPUSeconds"`

	// SizedReconcileRate is the --max-reconcile-rate this run was given
	// because the sizing in docs/performance.md asks for more than the provider's (0:
	// it ran with the provider's).
	SizedReconcileRate int `json:"sizedReconcileRate,omitempty"`

	// DeleteSeconds is how long until every MR and server object was gone.
	DeleteSeconds float64 `json:"deleteSeconds"`

	Storm *storm `json:"storm,omitempty"`

	// ForeignSecrets is how many unrelated Secrets (40 KB each) another
	// namespace held during the run.
	ForeignSecrets int `json:"foreignSecrets,omitempty"`

	// Provider is who ran the shape: empty for provider-terdut, else the
	// peer and how it was started (ProviderArgs).
	Provider     string `json:"provider,omitempty"`
	ProviderArgs string `json:"providerArgs,omitempty"`
	// Leaks is how many once-shown integration keys the server issued that
	// the namespace's objects show (kubectl get -o yaml), Secrets aside.
	Leaks int `json:"leaks"`
	// NotReady is how many never turned Ready (the peer: none more for
	// three polls); ReadySeconds is then to the last that did.
	NotReady int `json:"notReady,omitempty"`
	// LeftAfterDelete is how many objects or server teams were left when
	// deletion made no more progress (their finalizers then taken off).
	LeftAfterDelete int `json:"leftAfterDelete,omitempty"`
	// Behaviours are what a user would notice beyond speed, tried after
	// the run's rest (the compared shape only).
	Behaviours []behaviour `json:"behaviours,omitempty"`
}

type bench struct {
	stack *stack.Stack
	poll  time.Duration
	// kube creates the MRs: faster than the stack's client, so that at
	// N=5,000 the writer, not the provider, is not the time to Ready.
	kube client.Client
	// rate is the provider's --max-reconcile-rate; rateSet when
	// -provider-args set it (the bench then sizes no run's rate itself).
	rate    int
	rateSet bool
	// seen holds the MRs as one watch per kind delivers them: the bench
	// reads who is Ready from it rather than list thousands of MRs from the
	// API server every second, work that took the API server's CPU from the
	// provider it measures.
	seen client.Reader
	// readyAt is when that watch first showed each MR Ready and Synced.
	readyAt *firstReady
}

// watching is a cache of the provider's MRs in every namespace, fed by one
// watch per kind, started and synced, and when it first showed each MR
// Ready and Synced.
func watching(ctx context.Context, cfg *rest.Config) (client.Reader, *firstReady, error) {
	sch := runtime.NewScheme()
	if err := apis.AddToScheme(sch); err != nil {
		return nil, nil, err
	}
	crlog.SetLogger(logr.Discard()) // the cache's informers would log to stderr otherwise
	c, err := cache.New(cfg, cache.Options{Scheme: sch})
	if err != nil {
		return nil, nil, err
	}
	seen := &firstReady{at: map[types.UID]*milestones{}}
	for _, o := range []client.Object{&v1alpha1.Team{}, &v1alpha1.EscalationPolicy{}, &v1alpha1.DeadmanSwitch{}, &v1alpha1.Integration{}} {
		inf, err := c.GetInformer(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { seen.see(o, false) },
			UpdateFunc: func(_, n any) { seen.see(n, true) },
		}); err != nil {
			return nil, nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	for _, l := range lists() {
		// Starts the kind's informer and waits for it, once the cache runs.
		for {
			err := c.List(ctx, l)
			if errors.As(err, new(*cache.ErrCacheNotStarted)) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			break
		}
	}
	return c, seen, nil
}

// firstReady is when the bench's watch first showed each MR Ready and
// Synced: a time to Ready to the millisecond (a condition's
// lastTransitionTime has whole seconds, too coarse for MRs Ready within one
// or two), a little late rather than early (it includes the watch's lag).
// It also keeps when the watch first showed the MR's external create
// pending and succeeded, for the stages of a few MRs' time.
type firstReady struct {
	mu sync.Mutex
	at map[types.UID]*milestones
}

// milestones are when the watch first showed an MR changed after its
// create (the provider's first write: its references resolved), with its
// external create pending, succeeded, and Ready and Synced.
type milestones struct{ touched, pending, succeeded, ready time.Time }

// see records the milestones obj shows first now; changed says the watch
// delivered it as an update (the provider wrote it).
func (f *firstReady) see(obj any, changed bool) {
	mg, ok := obj.(resource.Managed)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.of(mg)
	now := time.Now()
	for _, s := range []struct {
		t    *time.Time
		seen bool
	}{
		{&m.touched, changed},
		{&m.pending, !meta.GetExternalCreatePending(mg).IsZero()},
		{&m.succeeded, !meta.GetExternalCreateSucceeded(mg).IsZero()},
		{&m.ready, readyAndSynced(mg)},
	} {
		if s.seen && s.t.IsZero() {
			*s.t = now
		}
	}
}

// of is mg's milestones; f.mu is held.
func (f *firstReady) of(mg resource.Managed) *milestones {
	m, ok := f.at[mg.GetUID()]
	if !ok {
		m = &milestones{}
		f.at[mg.GetUID()] = m
	}
	return m
}

// when is when mg was first seen Ready and Synced: now, if not before.
func (f *firstReady) when(mg resource.Managed) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.of(mg)
	if m.ready.IsZero() {
		m.ready = time.Now()
	}
	return m.ready
}

// milestones is a copy of mg's milestones.
func (f *firstReady) milestones(mg resource.Managed) milestones {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.of(mg)
}

func readyAndSynced(mg resource.Managed) bool {
	return mg.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && mg.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionTrue
}

// list lists ns's MRs of l's kind from what the watches delivered, without
// copies: the caller only reads them.
func (b *bench) list(ctx context.Context, l resource.ManagedList, ns string) error {
	return b.seen.List(ctx, l, client.InNamespace(ns), client.UnsafeDisableDeepCopy)
}

func (b *bench) logf(format string, args ...any) { b.stack.Stepf(format, args...) }

// cpu is the CPU seconds so far of the provider, of every other process
// of the local control plane (kube-apiserver, etcd, the controller manager,
// Crossplane and its RBAC manager), of the double and of the bench itself:
// the two cores they all share.
func (b *bench) cpu() map[string]float64 {
	out := map[string]float64{}
	if b.stack.Provider != nil {
		_, out["provider"] = procStats(b.stack.Provider.PID())
	}
	_, out["bench"] = procStats(os.Getpid())
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "crossplane", "rbac-manager", "terdut-double"} {
		if pid, ok := b.stack.PID(name); ok {
			_, out[name] = procStats(pid)
		}
	}
	return out
}

// cpuSeconds prints CPU seconds by process, sorted by name.
func cpuSeconds(m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, m[name]))
	}
	return strings.Join(parts, ", ")
}

// run measures one shape: restart the provider (so its peak RSS and CPU
// are this run's), create, wait, rest, (storm), delete.
func (b *bench) run(ctx context.Context, ns string, sh shape, naive, withStorm, withTrials bool, stormRPS, foreign int) (result, error) {
	r := result{Shape: sh, MRs: sh.MRs(), Naive: naive, ForeignSecrets: foreign}
	mode := "shared"
	if naive {
		mode = "naive"
	}
	b.logf("run %s (%s, %d MRs, %s, %d foreign Secrets)", ns, sh.Name, r.MRs, mode, foreign)
	b.stack.StopProvider()
	var extra []string
	if naive {
		extra = append(extra, "--naive")
	}
	if rate := b.sizedRate(r.MRs); rate > 0 {
		r.SizedReconcileRate = rate
		extra = append(extra, "--max-reconcile-rate="+strconv.Itoa(rate))
	}
	if err := b.stack.StartProvider(ctx, extra...); err != nil {
		return r, err
	}
	time.Sleep(5 * time.Second) // the controllers start once their CRDs are established
	if err := b.namespace(ctx, ns); err != nil {
		return r, err
	}
	d := b.stack.Double
	if err := d.Admin(ctx, http.MethodDelete, "/admin/counters", nil, nil); err != nil {
		return r, err
	}
	before, err := b.metric(ctx, `controller_runtime_reconcile_total{controller="managed/`)
	if err != nil {
		return r, err
	}

	cpuBefore := b.cpu()
	apiBefore := b.apiRequests(ctx)
	start := time.Now()
	if err := b.create(ctx, ns, sh); err != nil {
		return r, err
	}
	ready, err := b.waitReady(ctx, ns, r.MRs, 15*time.Minute)
	if err != nil {
		return r, err
	}
	r.ReadySeconds = time.Since(start).Seconds()
	r.P50, r.P95, r.Max = percentiles(ready, start, time.Millisecond)
	after, err := b.metric(ctx, `controller_runtime_reconcile_total{controller="managed/`)
	if err != nil {
		return r, err
	}
	if err := b.created(ctx, &r, after-before, cpuBefore); err != nil {
		return r, err
	}
	r.CreateAPIRequestsPerMR = requestsSince(apiBefore, b.apiRequests(ctx), r.MRs)
	b.logf("%d MRs Ready in %.1fs (CPU seconds meanwhile: %s); API server requests per MR meanwhile: %s; at rest for three polls",
		r.MRs, r.ReadySeconds, cpuSeconds(r.CreateCPUSeconds), perMR(r.CreateAPIRequestsPerMR))

	if err := b.atRest(ctx, &r, b.poll, 3, func() (int, error) { return b.metric(ctx, `provider_terdut_checks_total{`) }); err != nil {
		return r, err
	}
	if r.Leaks, err = b.leaks(ctx, ns); err != nil {
		return r, err
	}

	if withStorm {
		if r.Storm, err = b.storm(ctx, ns, stormRPS); err != nil {
			return r, err
		}
	}
	r.ProviderPeakRSSMiB, r.ProviderCPUSeconds = procStats(b.stack.Provider.PID())
	if withTrials {
		s, err := b.ourSubject(ctx, ns)
		if err != nil {
			return r, err
		}
		if r.Behaviours, err = b.trials(ctx, s, r.Leaks); err != nil {
			return r, err
		}
	}

	start = time.Now()
	if err := b.deleteAll(ctx, ns); err != nil {
		return r, err
	}
	r.DeleteSeconds = time.Since(start).Seconds()
	b.logf("deleted in %.1fs", r.DeleteSeconds)
	return r, b.cleared(ctx, ns)
}

// cleared deletes ns once its MRs are gone, and waits until it is. What the
// MRs leave to Kubernetes' garbage collector (their ProviderConfigUsages and
// connection Secrets) goes at about ten a second: after 5,000 MRs, the next
// runs would start beside thousands of them, the provider's caches and the
// API server busy with their deletion, and measure that too.
func (b *bench) cleared(ctx context.Context, ns string) error {
	// NOTE: metadata only: they are only counted, and the Secrets hold keys.
	usages := &metav1.PartialObjectMetadataList{}
	usages.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("ProviderConfigUsageList"))
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := b.stack.Kube.List(ctx, usages, client.InNamespace(ns)); err != nil {
		return err
	}
	if err := b.stack.Kube.List(ctx, secrets, client.InNamespace(ns)); err != nil {
		return err
	}
	start := time.Now()
	if err := client.IgnoreNotFound(b.stack.Kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
		return err
	}
	for deadline := start.Add(10 * time.Minute); ; time.Sleep(time.Second) {
		err := b.stack.Kube.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		if kerrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s not gone 10 minutes after its deletion", ns)
		}
	}
	b.logf("namespace %s deleted in %.1fs, with the %d ProviderConfigUsages and %d Secrets its MRs had left to the garbage collector",
		ns, time.Since(start).Seconds(), len(usages.Items), len(secrets.Items))
	return nil
}

// sizedRate is the --max-reconcile-rate the sizing in docs/performance.md asks for n MRs
// at the bench's poll (MRs / poll seconds, with a fifth more room, in tens),
// when that is more than the rate the provider runs with; 0 otherwise, or
// when -provider-args set a rate.
func (b *bench) sizedRate(n int) int {
	if b.rateSet || b.poll <= 0 {
		return 0
	}
	need := int(math.Ceil(float64(n)/b.poll.Seconds()*1.2/10)) * 10
	if need <= b.rate {
		return 0
	}
	return need
}

// foreignNamespace holds Secrets the provider has nothing to do with.
const foreignNamespace = "foreign-secrets"

// foreignSecrets fills foreignNamespace with n Secrets of 40 KB, the shape
// of Helm's release Secrets: a cluster full of other people's objects.
func (b *bench) foreignSecrets(ctx context.Context, n int) error {
	if err := client.IgnoreAlreadyExists(b.stack.Kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreignNamespace}})); err != nil {
		return err
	}
	b.logf("%d foreign Secrets of 40 KB in namespace %s", n, foreignNamespace)
	blob := make([]byte, 40<<10)
	for i := range blob {
		blob[i] = byte('a' + i%26)
	}
	objs := make([]client.Object, n)
	for i := range objs {
		objs[i] = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: foreignNamespace, Name: fmt.Sprintf("sh.helm.release.v1.app-%d.v1", i), Labels: map[string]string{"owner": "helm"}},
			Type:       "helm.sh/release.v1", Data: map[string][]byte{"release": blob},
		}
	}
	return b.createAll(ctx, objs)
}

// withoutForeignSecrets deletes foreignNamespace.
func (b *bench) withoutForeignSecrets(ctx context.Context) error {
	return b.stack.Kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreignNamespace}})
}

// namespace makes a namespace the ClusterProviderConfig admits.
func (b *bench) namespace(ctx context.Context, ns string) error {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"terdut.ryuvia.com/allowed-server": "default"}}}
	return client.IgnoreAlreadyExists(b.stack.Kube.Create(ctx, n))
}

// objects are the shape's MRs in ns.
func objects(ns string, sh shape) []client.Object {
	var out []client.Object
	ref := func(i int) *xpv2.Reference { return &xpv2.Reference{Name: "t" + strconv.Itoa(i)} }
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	for i := range sh.Teams {
		out = append(out, &v1alpha1.Team{ObjectMeta: meta("t" + strconv.Itoa(i)), Spec: v1alpha1.TeamSpec{ForProvider: v1alpha1.TeamParameters{DisplayName: fmt.Sprintf("%s team %d", ns, i)}}})
		if sh.Policy {
			out = append(out, &v1alpha1.EscalationPolicy{ObjectMeta: meta("t" + strconv.Itoa(i)), Spec: v1alpha1.EscalationPolicySpec{ForProvider: v1alpha1.EscalationPolicyParameters{
				TeamIDRef: ref(i), RepeatCount: 1,
				Levels: []v1alpha1.EscalationLevel{{Timeout: "5m", Targets: []v1alpha1.EscalationTarget{{Kind: "oncall"}, {Kind: "user", Username: "alice"}}}},
			}}})
		}
		for j := range sh.Switches {
			name := fmt.Sprintf("t%d-sw%d", i, j)
			out = append(out, &v1alpha1.DeadmanSwitch{ObjectMeta: meta(name), Spec: v1alpha1.DeadmanSwitchSpec{ForProvider: v1alpha1.DeadmanSwitchParameters{
				TeamIDRef: ref(i), Name: name, Matcher: "alertname=Watchdog,switch=" + name, Timeout: "15m",
			}}})
		}
		for j := range sh.Integrations {
			name := fmt.Sprintf("t%d-in%d", i, j)
			in := &v1alpha1.Integration{ObjectMeta: meta(name), Spec: v1alpha1.IntegrationSpec{ForProvider: v1alpha1.IntegrationParameters{TeamIDRef: ref(i), Name: name}}}
			in.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: name + "-webhook"}
			out = append(out, in)
		}
	}
	return out
}

// create makes the shape's MRs with eight writers, as a GitOps tool syncing
// a repository would.
func (b *bench) create(ctx context.Context, ns string, sh shape) error {
	return b.createAll(ctx, objects(ns, sh))
}

// createAll creates objs with eight writers.
func (b *bench) createAll(ctx context.Context, objs []client.Object) error {
	return b.each(objs, func(o client.Object) error { return b.kube.Create(ctx, o) })
}

// each calls do for each of objs from eight writers.
func (b *bench) each(objs []client.Object, do func(client.Object) error) error {
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for o := range work {
				errs <- do(o)
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func lists() []resource.ManagedList {
	return []resource.ManagedList{&v1alpha1.TeamList{}, &v1alpha1.EscalationPolicyList{}, &v1alpha1.DeadmanSwitchList{}, &v1alpha1.IntegrationList{}}
}

// waitReady waits until want MRs of ns are Ready and Synced, and returns
// when each was first seen so.
func (b *bench) waitReady(ctx context.Context, ns string, want int, limit time.Duration) ([]time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		var ready []time.Time
		notReady := 0
		for _, l := range lists() {
			if err := b.list(ctx, l, ns); err != nil {
				return nil, err
			}
			for _, mg := range l.GetItems() {
				if readyAndSynced(mg) {
					ready = append(ready, b.readyAt.when(mg))
				} else {
					notReady++
				}
			}
		}
		if len(ready) >= want && notReady == 0 {
			return ready, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := b.alive(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d MRs Ready after %s", len(ready), want, limit)
		}
		time.Sleep(time.Second)
	}
}

// created records what creating cost, once r.ReadySeconds is known: the
// reconciles a second, the server's requests by route and the CPU seconds
// of the control plane and the provider since cpuBefore.
func (b *bench) created(ctx context.Context, r *result, reconciles int, cpuBefore map[string]float64) error {
	r.ReconcilesPerSecond = div(float64(reconciles), r.ReadySeconds)
	var err error
	if r.CreateRequests, err = b.stack.Double.Counters(ctx); err != nil {
		return err
	}
	r.CreateCPUSeconds = map[string]float64{}
	for name, after := range b.cpu() {
		r.CreateCPUSeconds[name] = after - cpuBefore[name]
	}
	return nil
}

// atRest measures n polls of poll with nothing to do: requests and
// bytes to the server per MR per poll and, given checks (a counter of the
// MRs compared with the server), checks per MR per poll.
func (b *bench) atRest(ctx context.Context, r *result, poll time.Duration, n int, checks func() (int, error)) error {
	d := b.stack.Double
	time.Sleep(2 * time.Second)
	if err := d.Admin(ctx, http.MethodDelete, "/admin/counters", nil, nil); err != nil {
		return err
	}
	var checked0, checked1 int
	var err error
	if checks != nil {
		if checked0, err = checks(); err != nil {
			return err
		}
	}
	api0 := b.apiRequests(ctx)
	rest := time.Now()
	time.Sleep(time.Duration(n) * poll)
	if checks != nil {
		if checked1, err = checks(); err != nil {
			return err
		}
	}
	if r.RestRequests, err = d.Counters(ctx); err != nil {
		return err
	}
	var sentBytes map[string]int
	if err := d.Admin(ctx, http.MethodGet, "/admin/bytes", nil, &sentBytes); err != nil {
		return err
	}
	r.RestPolls = time.Since(rest).Seconds() / poll.Seconds()
	r.RestAPIRequestsPerMRPerPoll = requestsSince(api0, b.apiRequests(ctx), r.MRs)
	for k, v := range r.RestAPIRequestsPerMRPerPoll {
		r.RestAPIRequestsPerMRPerPoll[k] = v / r.RestPolls
	}
	b.logf("at rest, API server requests per MR per poll: %s", perMR(r.RestAPIRequestsPerMRPerPoll))
	gets, all, sent := 0, 0, 0
	for k, n := range r.RestRequests {
		if strings.HasPrefix(k, "GET /api/") {
			gets += n
		}
		if strings.HasPrefix(k, "GET /api/") || strings.Contains(k, " /api/") {
			all += n
		}
	}
	for k, n := range sentBytes {
		if strings.Contains(k, " /api/") {
			sent += n
		}
	}
	per := float64(r.MRs) * r.RestPolls
	r.ChecksPerMRPerPoll = float64(checked1-checked0) / per
	r.GETsPerMRPerPoll, r.RequestsPerMRPoll, r.BytesPerMRPerPoll = float64(gets)/per, float64(all)/per, float64(sent)/per
	return nil
}

// apiRequests are the API server's requests so far by verb and resource;
// none if its metrics cannot be read (the figure is then missing, not wrong).
func (b *bench) apiRequests(ctx context.Context) map[string]float64 {
	out, err := b.stack.Kubectl(ctx, nil, "get", "--raw", "/metrics")
	if err != nil {
		b.logf("cannot read the API server's metrics: %v", err)
		return nil
	}
	return apiRequests(out)
}

// metric sums the provider's metric lines that start with prefix.
func (b *bench) metric(ctx context.Context, prefix string) (int, error) {
	return metricAt(ctx, b.stack.ProviderMetricsAddr(), prefix)
}

// metricAt sums the metric lines served at addr that start with prefix.
func metricAt(ctx context.Context, addr, prefix string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rsp.Body.Close() }()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		n += int(v)
	}
	return n, nil
}

// objects are gone.
func (b *bench) deleteAll(ctx context.Context, ns string) error {
	// One delete per MR with eight writers, as a GitOps tool pruning them
	// would: one DeleteCollection of thousands can outlast the API
	// server's request timeout.
	var objs []client.Object
	for _, l := range lists() {
		if err := b.list(ctx, l, ns); err != nil {
			return err
		}
		for _, mg := range l.GetItems() {
			objs = append(objs, mg)
		}
	}
	if err := b.each(objs, func(o client.Object) error { return client.IgnoreNotFound(b.kube.Delete(ctx, o)) }); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(time.Second) {
		left := 0
		for _, l := range lists() {
			if err := b.list(ctx, l, ns); err != nil {
				return err
			}
			left += len(l.GetItems())
		}
		teams, err := b.serverTeams(ctx, ns)
		if err != nil {
			return err
		}
		if left += teams; left == 0 {
			return nil
		}
		if err := b.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d MRs or server teams of %s left after 10 minutes", left, ns)
		}
	}
}

// alive fails when the provider has exited: a run without it measures
// nothing.
func (b *bench) alive() error {
	if b.stack.Provider == nil || b.stack.Provider.Exited() {
		return fmt.Errorf("the provider exited; see %s", b.stack.ProviderLog())
	}
	return nil
}
