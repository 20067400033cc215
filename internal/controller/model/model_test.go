package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/deadmanswitch"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/integration"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// The budget every `make test` runs; `make chaos-model WALK=... STEPS=...`
// sets its own (MODEL_WALK, MODEL_WALKS, MODEL_STEPS).
const (
	defaultWalks = 3
	defaultSteps = 1500
)

const (
	ns       = "team-a"
	adminKey = "tdk_model_admin"
)

// TestModel is a numbered, reproducible random walk of spec changes, crashes and server
// faults over the switch and integration external clients, against the
// terdut-server double, checking after every step what a user must be able
// to rely on (see world.check). A failure prints the walk's number and the shortest
// step list that still fails.
func TestModel(t *testing.T) {
	walks, steps := defaultWalks, defaultSteps
	first := uint64(1)
	if v, err := strconv.Atoi(os.Getenv("MODEL_STEPS")); err == nil && v > 0 {
		steps = v
	}
	if v, err := strconv.ParseUint(os.Getenv("MODEL_WALK"), 10, 64); err == nil {
		first, walks = v, 1
	}
	if v, err := strconv.Atoi(os.Getenv("MODEL_WALKS")); err == nil && v > 0 {
		walks = v
	}
	for num := first; num < first+uint64(walks); num++ {
		walk := generate(num, steps)
		start := time.Now()
		w, err := run(t.Context(), walk)
		if err == nil {
			t.Logf("walk %d: %d steps in %s: %s", num, steps, time.Since(start).Round(time.Millisecond), w.summary())
			continue
		}
		short := shrink(t.Context(), walk)
		var b strings.Builder
		for i, s := range short {
			fmt.Fprintf(&b, "\n  %3d %s", i, s)
		}
		t.Fatalf("walk %d failed at a step of %d: %v\nreproduce: make chaos-model WALK=%d STEPS=%d\nshortest failing walk (%d steps):%s", num, steps, err, num, steps, len(short), b.String())
	}
}

// op is what one step does.
type op int

const (
	opReconcile op = iota
	opReconcileAll
	opAdd
	opDelete
	opRename
	opRetime
	opRekind
	opCrashNextCreate
	opExternalDelete
	opFault
	opLag
	opQuirks
	opClearFaults
	opTick
)

var opNames = map[op]string{
	opReconcile: "reconcile", opReconcileAll: "reconcile-all", opAdd: "add", opDelete: "delete",
	opRename: "rename", opRetime: "retime", opRekind: "rekind", opCrashNextCreate: "crash-next-create",
	opExternalDelete: "external-delete", opFault: "fault", opLag: "lag", opQuirks: "quirks", opClearFaults: "clear-faults", opTick: "tick",
}

// step is one move of the walk; it names MRs by index, so a walk is data
// that can be replayed and cut down.
type step struct {
	Op  op
	MR  int
	Arg int
}

func (s step) String() string { return fmt.Sprintf("%s mr=%d arg=%d", opNames[s.Op], s.MR, s.Arg) }

// generate makes walk number num, of n steps.
func generate(num uint64, n int) []step {
	r := rand.New(rand.NewPCG(num, num^0x9e3779b97f4a7c15))
	weights := []struct {
		op op
		w  int
	}{
		{opReconcile, 40},
		{opReconcileAll, 6},
		{opAdd, 6},
		{opDelete, 5},
		{opRename, 4},
		{opRetime, 4},
		{opRekind, 2},
		{opCrashNextCreate, 4},
		{opExternalDelete, 1},
		{opFault, 10},
		{opLag, 2},
		{opQuirks, 3},
		{opClearFaults, 4},
		{opTick, 12},
	}
	total := 0
	for _, w := range weights {
		total += w.w
	}
	out := make([]step, n)
	for i := range out {
		x := r.IntN(total)
		for _, w := range weights {
			if x < w.w {
				out[i] = step{Op: w.op, MR: r.IntN(1000), Arg: r.IntN(1000)}
				break
			}
			x -= w.w
		}
	}
	return out
}

// shrink cuts a failing walk down while it still fails: chunks first, then
// single steps, within a time budget.
func shrink(ctx context.Context, walk []step) []step {
	deadline := time.Now().Add(2 * time.Minute)
	if _, at, err := runAt(ctx, walk); err != nil && at < len(walk) {
		walk = walk[:at+1] // nothing after the failing step matters
	}
	fails := func(w []step) bool { _, err := run(ctx, w); return err != nil }
	for size := len(walk) / 2; size >= 1 && time.Now().Before(deadline); size /= 2 {
		for i := 0; i+size <= len(walk) && time.Now().Before(deadline); {
			cand := slices.Concat(walk[:i], walk[i+size:])
			if fails(cand) {
				walk = cand
				continue
			}
			i += size
		}
	}
	return walk
}

// mr is one managed resource of the model.
type mr struct {
	sw *v1alpha1.DeadmanSwitch
	in *v1alpha1.Integration
	// deleted: its deletion was asked; gone: its finalizer went.
	deleted, gone bool
	// crash: the next Create's result is lost, as if the provider died
	// between the POST and recording the external name.
	crash bool
	// mayRotate: the spec (a kind change) or someone deleting its object on
	// the server may give it a new ID and key until it settles again.
	mayRotate bool
	names     int
}

func (m *mr) obj() resource.Managed {
	if m.sw != nil {
		return m.sw
	}
	return m.in
}

func (m *mr) kind() string {
	if m.sw != nil {
		return "switch"
	}
	return "integration"
}

// world is the double, a fake cluster and the MRs.
type world struct {
	double *terdutdouble.Server
	admin  *terdut.Client
	api    *terdut.Client
	kube   client.Client
	rec    *recorder
	clock  *clock
	teamID int64
	// mrs are the MRs not gone yet; all are every MR ever made, by index.
	mrs, all []*mr
	// absence is each kind's, as Setup makes them.
	absence map[string]*extclient.Absence
	// said is every error, condition message and event the walk saw.
	said []string
	// counts of what happened, for the summary.
	creates, confirming, crashes, faults, steps int
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recorder keeps every event's message.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Event(_ runtime.Object, e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, string(e.Reason)+": "+e.Message)
}

func (r *recorder) WithAnnotations(_ ...string) event.Recorder { return r }

func newWorld(ctx context.Context) (*world, func(), error) {
	// NOTE: some marks are still written with the real clock (the
	// integration's Secret "creating" mark, the switch's create-attempt
	// annotation), the server's created_at and the MRs' times with this one:
	// it starts an hour ahead of the real clock, so the server's times are
	// never older than a mark (with a fixed start, 2026-12-04 09:00, every
	// run after that time failed walk 1 with a second integration).
	c := &clock{now: time.Now().UTC().Truncate(time.Second).Add(time.Hour)}
	d := terdutdouble.New(terdutdouble.Options{AdminKey: adminKey, Now: c.Now})
	hs := httptest.NewServer(d.Handler())
	admin, err := terdut.New(terdut.Options{Endpoint: hs.URL, Token: adminKey, MaxRetries: -1})
	if err != nil {
		hs.Close()
		return nil, nil, err
	}
	// NOTE: no shared lists: a walk replays the same way every time.
	api, err := terdut.New(terdut.Options{Endpoint: hs.URL, Token: adminKey, MaxRetries: -1, Timeout: 150 * time.Millisecond})
	if err != nil {
		hs.Close()
		return nil, nil, err
	}
	tm, err := admin.CreateTeam(ctx, "Model")
	if err != nil {
		hs.Close()
		return nil, nil, err
	}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	w := &world{
		double: d, admin: admin, api: api, kube: fake.NewClientBuilder().WithScheme(s).Build(),
		rec: &recorder{}, clock: c, teamID: tm.ID,
		absence: map[string]*extclient.Absence{"switch": extclient.NewAbsence(extclient.DefaultAbsenceConfirmation), "integration": extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)},
	}
	for _, a := range w.absence {
		a.Clock = c.Now
	}
	for range 4 {
		w.add(ctx)
	}
	return w, hs.Close, nil
}

// run replays a walk on a fresh world; nil when every check held, and a
// final convergence (faults off, time passing) reached the spec.
func run(ctx context.Context, walk []step) (*world, error) {
	w, _, err := runAt(ctx, walk)
	return w, err
}

// runAt is run, with the index of the step that failed (len(walk) when the
// final convergence did).
func runAt(ctx context.Context, walk []step) (*world, int, error) {
	w, stop, err := newWorld(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	for i, s := range walk {
		before := w.snapshot(ctx)
		w.do(ctx, s)
		w.steps++
		w.mrs = slices.DeleteFunc(w.mrs, func(m *mr) bool { return m.gone })
		if err := w.check(ctx, before); err != nil {
			return w, i, fmt.Errorf("step %d (%s): %w", i, s, err)
		}
	}
	if err := w.converge(ctx); err != nil {
		return w, len(walk), fmt.Errorf("after the walk: %w", err)
	}
	return w, len(walk), nil
}

func (w *world) summary() string {
	return fmt.Sprintf("%d MRs, %d creates, %d reconciles confirming an absence, %d crashes, %d faults, %d issued secrets never said",
		len(w.all), w.creates, w.confirming, w.crashes, w.faults, len(w.double.Issued()))
}

func (w *world) add(ctx context.Context) {
	i := len(w.all)
	teamID := w.teamID
	created := metav1.NewTime(w.clock.Now())
	om := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("mr%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)), CreationTimestamp: created, Generation: 1}
	m := &mr{}
	if i%2 == 0 {
		m.sw = &v1alpha1.DeadmanSwitch{ObjectMeta: om, Spec: v1alpha1.DeadmanSwitchSpec{ForProvider: v1alpha1.DeadmanSwitchParameters{
			TeamID: &teamID, Name: fmt.Sprintf("mr%d.0", i), Matcher: fmt.Sprintf("alertname=W%d", i), Timeout: "15m", Severity: "critical",
		}}}
	} else {
		m.in = &v1alpha1.Integration{ObjectMeta: om, Spec: v1alpha1.IntegrationSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: om.Name + "-webhook"}},
			ForProvider:         v1alpha1.IntegrationParameters{TeamID: &teamID, Kind: terdut.IntegrationAlertmanager, Name: fmt.Sprintf("mr%d.0", i)},
		}}
	}
	_ = w.kube.Create(ctx, m.obj().DeepCopyObject().(client.Object))
	w.mrs = append(w.mrs, m)
	w.all = append(w.all, m)
}

// persist writes the MR as the reconcile left it, as crossplane-runtime
// does after a reconcile (its external name, annotations, status).
func (w *world) persist(ctx context.Context, m *mr) {
	stored := m.obj().DeepCopyObject().(client.Object)
	if err := w.kube.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
		return
	}
	o := m.obj().DeepCopyObject().(client.Object)
	o.SetDeletionTimestamp(nil)
	o.SetResourceVersion(stored.GetResourceVersion())
	_ = w.kube.Update(ctx, o)
}

// reload is the MR as the provider finds it after a restart: what was last
// written to the cluster.
func (w *world) reload(ctx context.Context, m *mr) {
	o := m.obj().DeepCopyObject().(client.Object)
	if err := w.kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		return
	}
	if m.deleted {
		now := metav1.NewTime(w.clock.Now())
		o.SetDeletionTimestamp(&now)
	}
	m.restore(o)
	// A restart forgets what was only in memory.
	for k := range w.absence {
		w.absence[k] = extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
		w.absence[k].Clock = w.clock.Now
	}
}

// live returns the MR a step names: one of those that still exist.
func (w *world) live(i int) *mr {
	var live []*mr
	for _, m := range w.mrs {
		if !m.gone {
			live = append(live, m)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[i%len(live)]
}

func (w *world) do(ctx context.Context, s step) {
	m := w.live(s.MR)
	if m != nil {
		// A user's change is written to the API server at once.
		defer w.persist(ctx, m)
	}
	switch s.Op {
	case opReconcile:
		if m != nil {
			w.reconcile(ctx, m)
		}
	case opReconcileAll:
		for _, m := range w.mrs {
			if !m.gone {
				w.reconcile(ctx, m)
			}
		}
	case opAdd:
		live := 0
		for _, m := range w.mrs {
			if !m.gone {
				live++
			}
		}
		if live < 12 {
			w.add(ctx)
		}
	case opDelete:
		if m != nil && !m.deleted {
			m.deleted = true
			now := metav1.NewTime(w.clock.Now())
			m.obj().SetDeletionTimestamp(&now)
		}
	case opRename:
		if m != nil && !m.deleted {
			m.names++
			name := fmt.Sprintf("%s.%d", m.obj().GetName(), m.names)
			if m.sw != nil {
				m.sw.Spec.ForProvider.Name = name
			} else {
				m.in.Spec.ForProvider.Name = name
			}
			m.obj().SetGeneration(m.obj().GetGeneration() + 1)
		}
	case opRetime:
		if m != nil && !m.deleted && m.sw != nil {
			m.sw.Spec.ForProvider.Timeout = fmt.Sprintf("%dm", 1+s.Arg%60)
			m.sw.SetGeneration(m.sw.GetGeneration() + 1)
		}
	case opRekind:
		if m != nil && !m.deleted && m.in != nil {
			kinds := []string{terdut.IntegrationAlertmanager, "grafana", "webhook"}
			if k := kinds[s.Arg%len(kinds)]; k != m.in.Spec.ForProvider.Kind {
				m.in.Spec.ForProvider.Kind = k
				m.in.SetGeneration(m.in.GetGeneration() + 1)
				m.mayRotate = true
			}
		}
	case opCrashNextCreate:
		if m != nil {
			m.crash = true
		}
	case opExternalDelete:
		if m != nil {
			w.externalDelete(ctx, m)
		}
	case opFault:
		w.faults++
		w.double.AddFault(faultFor(s.Arg))
	case opLag:
		w.double.SetNotFoundAfterCreate(time.Duration(s.Arg%40) * time.Second)
	case opQuirks:
		w.double.SetQuirks(quirksFor(s.Arg))
	case opClearFaults:
		w.double.ClearFaults()
		w.double.SetNotFoundAfterCreate(0)
		w.double.SetQuirks(terdutdouble.Quirks{})
	case opTick:
		w.clock.add(time.Duration(1+s.Arg%30) * time.Second)
	}
}

// lieFor bounds, in the walk's time, how long a list lies: less than
// extclient.DefaultAbsenceConfirmation.
const lieFor = terdutdouble.Duration(30 * time.Second)

// quirksFor is a server that answers 200 and still misleads: lists in
// another order, lists one item short, objects read as they were before an
// update. Bounded as the lying lists are.
func quirksFor(arg int) terdutdouble.Quirks {
	return terdutdouble.Quirks{
		Reorder:    arg&1 != 0,
		ShortLists: arg&2 != 0,
		Stale:      terdutdouble.Duration(time.Duration(arg%20) * time.Second),
		For:        lieFor,
	}
}

// faultFor is one of the server's misbehaviours.
func faultFor(arg int) terdutdouble.Fault {
	routes := []string{"/api/teams/{id}/deadman/switches", "/api/teams/{id}/integrations"}
	items := []string{"/api/teams/{id}/deadman/switches/{sid}", "/api/teams/{id}/integrations/{iid}"}
	route, item := routes[arg%2], items[arg%2]
	times := 1 + (arg/2)%3
	if arg%29 == 0 {
		// 429: rare, as it pauses every request for its Retry-After (1 s
		// of real time).
		return terdutdouble.Fault{Route: route, Status: http.StatusTooManyRequests, RetryAfter: 1, Times: 1}
	}
	switch (arg / 6) % 7 {
	case 0: // a list that lies (for less time than absences are confirmed
		// after: a server that lies longer defeats any such wait, and
		// --absence-confirmation is to be set above its lag)
		return terdutdouble.Fault{Method: http.MethodGet, Route: route, Status: http.StatusOK, Body: "[]", Times: times, For: lieFor}
	case 1: // a 5xx on a list
		return terdutdouble.Fault{Method: http.MethodGet, Route: route, Status: http.StatusBadGateway, Times: times}
	case 2: // a create committed, answered 504
		return terdutdouble.Fault{Method: http.MethodPost, Route: route, Status: http.StatusGatewayTimeout, Commit: true, Times: 1}
	case 3: // a write committed, answered 502
		return terdutdouble.Fault{Route: item, Status: http.StatusBadGateway, Commit: true, Times: 1}
	case 4: // a timeout after the commit
		return terdutdouble.Fault{Method: http.MethodPost, Route: route, Commit: true, Delay: terdutdouble.Duration(300 * time.Millisecond), Times: 1}
	case 5: // a list that lies, more often
		return terdutdouble.Fault{Method: http.MethodGet, Route: route, Status: http.StatusOK, Body: "[]", Times: 2 + times, For: lieFor}
	default: // a 5xx on a write, not committed
		return terdutdouble.Fault{Route: item, Status: http.StatusInternalServerError, Times: times}
	}
}

// externalDelete is someone deleting an MR's object on the server.
func (w *world) externalDelete(ctx context.Context, m *mr) {
	id, ok, _ := extclient.ExternalID(m.obj())
	if !ok {
		return
	}
	m.mayRotate = true
	if m.sw != nil {
		_ = w.admin.DeleteDeadmanSwitch(ctx, w.teamID, id)
	} else {
		_ = w.admin.DeleteIntegration(ctx, w.teamID, id)
	}
}

// deps are what Connect hands a kind's external client.
func (w *world) deps(m *mr) generic.Deps {
	return generic.Deps{
		Client: w.api, Kube: w.kube, Reader: w.kube, Record: w.rec,
		Adopter: extclient.Adopter{Record: w.rec, Object: m.obj(), Since: m.obj().GetCreationTimestamp().Time},
		Absence: w.absence[m.kind()],
	}
}

// reconcile is crossplane-runtime's managed reconcile of m, as far as the
// external client sees it.
func (w *world) reconcile(ctx context.Context, m *mr) {
	defer func() {
		if !m.gone {
			w.persist(ctx, m)
		}
	}()
	var ext external
	if m.sw != nil {
		ext = adapt[*v1alpha1.DeadmanSwitch]{deadmanswitch.New(w.deps(m))}
	} else {
		ext = adapt[*v1alpha1.Integration]{integration.New(w.deps(m))}
	}
	obj := m.obj()
	o, err := ext.Observe(ctx, obj)
	if w.note(err, obj) {
		if strings.Contains(err.Error(), "confirming it is gone") {
			w.confirming++
		}
		return
	}
	switch {
	case m.deleted && o.ResourceExists:
		_, err = ext.Delete(ctx, obj)
		w.note(err, obj)
	case m.deleted:
		m.gone = true
		_ = w.kube.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: obj.GetName() + "-webhook"}})
	case !o.ResourceExists:
		_, err = ext.Create(ctx, obj)
		w.creates++
		if m.crash {
			m.crash = false
			w.crashes++
			w.reload(ctx, m)
			return
		}
		if !w.note(err, obj) {
			meta.SetExternalCreateSucceeded(obj, time.Now())
		}
	case !o.ResourceUpToDate:
		_, err = ext.Update(ctx, obj)
		w.note(err, obj)
	default:
		// Settled: it holds its object as its spec says.
		m.mayRotate = false
	}
}

// external is a kind's external client, untyped.
type external interface {
	Observe(ctx context.Context, mg resource.Managed) (managed.ExternalObservation, error)
	Create(ctx context.Context, mg resource.Managed) (managed.ExternalCreation, error)
	Update(ctx context.Context, mg resource.Managed) (managed.ExternalUpdate, error)
	Delete(ctx context.Context, mg resource.Managed) (managed.ExternalDelete, error)
}

type adapt[M resource.Managed] struct {
	e managed.TypedExternalClient[M]
}

func (a adapt[M]) Observe(ctx context.Context, mg resource.Managed) (managed.ExternalObservation, error) {
	return a.e.Observe(ctx, mg.(M))
}

func (a adapt[M]) Create(ctx context.Context, mg resource.Managed) (managed.ExternalCreation, error) {
	return a.e.Create(ctx, mg.(M))
}

func (a adapt[M]) Update(ctx context.Context, mg resource.Managed) (managed.ExternalUpdate, error) {
	return a.e.Update(ctx, mg.(M))
}

func (a adapt[M]) Delete(ctx context.Context, mg resource.Managed) (managed.ExternalDelete, error) {
	return a.e.Delete(ctx, mg.(M))
}

// restore puts back the MR as it was before a Create whose result the
// provider did not live to record.
func (m *mr) restore(before runtime.Object) {
	if m.sw != nil {
		m.sw = before.(*v1alpha1.DeadmanSwitch)
	} else {
		m.in = before.(*v1alpha1.Integration)
	}
}

// note keeps what the provider said (errors, conditions); true on an error.
func (w *world) note(err error, obj resource.Managed) bool {
	if c := obj.GetCondition(xpv2.TypeReady); c.Message != "" {
		w.said = append(w.said, c.Message)
	}
	if err == nil {
		return false
	}
	w.said = append(w.said, err.Error())
	return true
}

// state is what the checks compare between two steps.
type state struct {
	objects map[int64]object
	held    map[int64]*mr
	keys    map[*mr]string
}

type object struct {
	kind, name, integrationKind string
	// timeout is a switch's, as the server has it.
	timeout string
}

func (w *world) snapshot(ctx context.Context) state {
	st := w.double.Snapshot()
	s := state{objects: map[int64]object{}, held: map[int64]*mr{}, keys: map[*mr]string{}}
	for _, sw := range st.Switches {
		s.objects[sw.ID] = object{kind: "switch", name: sw.Name, timeout: sw.Timeout}
	}
	for _, in := range st.Integrations {
		s.objects[in.ID] = object{kind: "integration", name: in.Name, integrationKind: in.Kind}
	}
	for _, m := range w.mrs {
		if id, ok, _ := extclient.ExternalID(m.obj()); ok && !m.gone {
			s.held[id] = m
		}
		if m.in != nil && !m.gone {
			s.keys[m] = w.secretKey(ctx, m)
		}
	}
	return s
}

func (w *world) secretKey(ctx context.Context, m *mr) string {
	sec := &corev1.Secret{}
	if err := w.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: m.in.GetName() + "-webhook"}, sec); err != nil {
		return ""
	}
	return string(sec.Data[integration.SecretKeyKey])
}

// owner is the MR whose name an object carries ("mr<i>.<n>").
func (w *world) owner(o object) *mr {
	i, err := strconv.Atoi(strings.TrimPrefix(strings.SplitN(o.name, ".", 2)[0], "mr"))
	if err != nil || i >= len(w.all) {
		return nil
	}
	return w.all[i]
}

// check holds after every step:
//   - at most one server object per MR;
//   - no object an MR held went, unless its spec asked (deleted, a kind
//     change) or someone deleted it on the server;
//   - no key in a Secret changed, unless its spec or someone's delete did;
//   - every key in a Secret is accepted by the server;
//   - no issued secret in anything the provider said.
func (w *world) check(ctx context.Context, before state) error {
	after := w.snapshot(ctx)
	per := map[*mr]int{}
	for _, o := range after.objects {
		if m := w.owner(o); m != nil {
			per[m]++
			if per[m] > 1 {
				return fmt.Errorf("%s %s has %d objects on the server", m.kind(), m.obj().GetName(), per[m])
			}
		}
	}
	for id, m := range before.held {
		if _, still := after.objects[id]; still || m.deleted || m.mayRotate {
			continue
		}
		if o, ok := before.objects[id]; ok {
			return fmt.Errorf("%s %d of %s went from the server though its spec did not ask (%+v)", o.kind, id, m.obj().GetName(), o)
		}
	}
	for m, key := range after.keys {
		was := before.keys[m]
		if was != "" && key != was && !m.mayRotate {
			return fmt.Errorf("the key in %s's Secret changed though its spec did not ask", m.in.GetName())
		}
		if key != "" && !w.double.Verify(key).Valid && !m.mayRotate && !m.deleted {
			return fmt.Errorf("%s's Secret holds a key the server refuses", m.in.GetName())
		}
	}
	issued := w.double.Issued()
	w.said = append(w.said, w.rec.drain()...)
	for _, s := range w.said {
		for _, sec := range issued {
			if strings.Contains(s, sec) {
				return fmt.Errorf("an issued secret was said: in %q", s[:min(len(s), 40)])
			}
		}
	}
	w.said = w.said[:0]
	return nil
}

func (r *recorder) drain() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.msgs
	r.msgs = nil
	return out
}

// converge turns the faults off, lets time pass and reconciles everything
// until it settles: then every live MR holds one object as its spec says,
// with a key the server accepts, and a deleted one holds none.
func (w *world) converge(ctx context.Context) error {
	w.double.ClearFaults()
	w.double.SetNotFoundAfterCreate(0)
	w.double.SetQuirks(terdutdouble.Quirks{})
	// NOTE: a crash armed by the walk is a fault too: each one forgets
	// every absence under way, and the rounds below are budgeted for one
	// confirmation by ID and one by name, not for restarts.
	for _, m := range w.mrs {
		m.crash = false
	}
	// NOTE: retried within --max-backoff, as the runtime does: reads a
	// third of the confirmation wait apart.
	for range 16 {
		w.clock.add(extclient.DefaultAbsenceConfirmation / 3)
		before := w.snapshot(ctx)
		for _, m := range w.mrs {
			if !m.gone {
				w.reconcile(ctx, m)
			}
		}
		if err := w.check(ctx, before); err != nil {
			return err
		}
	}
	st := w.snapshot(ctx)
	for _, m := range w.mrs {
		id, ok, _ := extclient.ExternalID(m.obj())
		o, exists := st.objects[id]
		switch {
		case m.gone:
			continue
		case m.deleted:
			return fmt.Errorf("%s %s is still being deleted", m.kind(), m.obj().GetName())
		case !ok || !exists:
			return fmt.Errorf("%s %s has no object (external name %q)", m.kind(), m.obj().GetName(), meta.GetExternalName(m.obj()))
		case m.sw != nil && o.name != m.sw.Spec.ForProvider.Name:
			return fmt.Errorf("switch %s is named %q on the server, want %q", m.sw.GetName(), o.name, m.sw.Spec.ForProvider.Name)
		case m.sw != nil && !oneDuration(o.timeout, m.sw.Spec.ForProvider.Timeout):
			return fmt.Errorf("switch %s times out after %q on the server, want %q", m.sw.GetName(), o.timeout, m.sw.Spec.ForProvider.Timeout)
		case m.in != nil && (o.name != m.in.Spec.ForProvider.Name || o.integrationKind != m.in.Spec.ForProvider.Kind):
			return fmt.Errorf("integration %s is %q %s on the server, want %q %s", m.in.GetName(), o.name, o.integrationKind, m.in.Spec.ForProvider.Name, m.in.Spec.ForProvider.Kind)
		case m.in != nil && w.double.Verify(w.secretKey(ctx, m)).ID != id:
			return fmt.Errorf("integration %s's Secret holds no key of integration %d", m.in.GetName(), id)
		}
	}
	return nil
}

// oneDuration reports whether two Go duration strings are one duration,
// parsed here rather than by the code under test.
func oneDuration(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}
