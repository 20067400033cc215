package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"

	_ "embed"
)

// The peer is crossplane-contrib's provider-http: a user without a
// dedicated provider writes one Request per server object, with jq mappings
// for create, observe, update and remove. It runs out of cluster as the
// admin, as ours does in this benchmark, against the same double.

// requestGVK is provider-http's namespaced Request.
func requestGVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "http.m.crossplane.io", Version: "v1alpha2", Kind: "Request"}
}

// peerMetricsAddr is where provider-http serves its metrics: controller-
// runtime's default, on every interface; v1.0.14 has no flag to change it.
const peerMetricsAddr = "127.0.0.1:8080"

// tokenSecret holds the key the Requests' Authorization headers name, in
// the provider's namespace, as its examples keep their tokens.
const tokenSecret = "terdut-token"

// A peer is provider-http, built and its CRDs installed.
type peer struct {
	bin  string
	proc *stack.Process
}

// newPeer builds provider-http (cached), installs its CRDs, the key Secret
// and the ClusterProviderConfig "default" its Requests use by default.
func (b *bench) newPeer(ctx context.Context) (*peer, error) {
	bin, crds, err := b.stack.ProviderHTTP(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.stack.Kubectl(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		return nil, err
	}
	if _, err := b.stack.Kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return nil, err
	}
	key := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: tokenSecret},
		StringData: map[string]string{"token": b.stack.Double.AdminKey.Reveal()},
	}
	if err := client.IgnoreAlreadyExists(b.stack.Kube.Create(ctx, key)); err != nil {
		return nil, err
	}
	pc := `{"apiVersion":"http.m.crossplane.io/v1alpha2","kind":"ClusterProviderConfig","metadata":{"name":"default"},"spec":{"credentials":{"source":"None"}}}`
	if _, err := b.stack.Kubectl(ctx, []byte(pc), "apply", "-f", "-"); err != nil {
		return nil, err
	}
	return &peer{bin: bin}, nil
}

// start runs provider-http with args (none: its defaults).
func (b *bench) startPeer(ctx context.Context, p *peer, args ...string) error {
	b.stopPeer(p)
	proc, err := b.stack.Start(ctx, "provider-http", p.bin, args...)
	if err != nil {
		return err
	}
	p.proc = proc
	// Its controllers start once it has seen its CRDs established.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		if proc.Exited() {
			return fmt.Errorf("provider-http exited; see %s", filepath.Join(b.stack.Run, "provider-http.log"))
		}
		if _, err := b.peerMetric(ctx, `controller_runtime_active_workers{controller="managed/request`); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("provider-http served no metrics after a minute")
		}
	}
}

func (b *bench) stopPeer(p *peer) {
	if p.proc != nil {
		p.proc.Stop()
		p.proc = nil
	}
}

// peerMetric is like metric, for provider-http.
func (b *bench) peerMetric(ctx context.Context, prefix string) (int, error) {
	return metricAt(ctx, peerMetricsAddr, prefix)
}

// requests.yaml is the mixed shape as a user writes it for provider-http,
// after its examples (examples/namespaced/request.yaml): one Request per
// server object, its key injected into the headers from a Secret.
//
//go:embed requests.yaml
var requestsYAML string

// manifest is what requests.yaml is rendered with: team I of NS, with
// the values only the server knows (TeamID, UserID) once it has said them.
type manifest struct {
	API, NS, Name, Token string
	I                    int
	TeamID, UserID       int64
}

// Named is m for the object named name.
func (m manifest) Named(name string) manifest {
	m.Name = name
	return m
}

// objects renders the template what of requests.yaml ("team",
// "dependents" or "switch") for m.
func (m manifest) objects(what string) ([]client.Object, error) {
	t, err := template.New("requests").Parse(requestsYAML)
	if err != nil {
		return nil, err
	}
	m.Token = tokenSecret
	var out strings.Builder
	if err := t.ExecuteTemplate(&out, what, m); err != nil {
		return nil, err
	}
	var objs []client.Object
	for doc := range strings.SplitSeq(out.String(), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, fmt.Errorf("requests.yaml %s: %w", what, err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// requestState is what a Request reports: Ready and Synced, when it turned
// Ready, and the id in its last response.
func requestState(u *unstructured.Unstructured) (ready bool, at time.Time, id int64) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	readyOK, syncedOK := false, false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		switch m["type"] {
		case "Ready":
			readyOK = true
			at, _ = time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
		case "Synced":
			syncedOK = true
		}
	}
	raw, _, _ := unstructured.NestedString(u.Object, "status", "response", "body")
	var b struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal([]byte(raw), &b)
	return readyOK && syncedOK, at, b.ID
}

// requests lists ns's Requests from the watches.
func (b *bench) requests(ctx context.Context, ns string) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(requestGVK().GroupVersion().WithKind("RequestList"))
	if err := b.seen.List(ctx, l, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// peerRun measures provider-http on the mixed shape sh in ns, started with
// args, like run measures ours: create, all Ready, at rest for polls of
// poll, delete.
func (b *bench) peerRun(ctx context.Context, p *peer, ns string, sh shape, label string, poll time.Duration, withTrials bool, args ...string) (result, error) {
	r := result{Shape: sh, MRs: sh.MRs(), Provider: label, ProviderArgs: strings.Join(args, " ")}
	b.logf("run %s (%s as provider-http Requests, %s: %s)", ns, sh.Name, label, r.ProviderArgs)
	if err := b.startPeer(ctx, p, args...); err != nil {
		return r, err
	}
	defer b.stopPeer(p)
	if err := b.namespace(ctx, ns); err != nil {
		return r, err
	}
	d := b.stack.Double
	st, err := d.State(ctx)
	if err != nil {
		return r, err
	}
	var alice int64 // the policies' user
	for _, u := range st.Users {
		if u.Username == "alice" {
			alice = u.ID
		}
	}
	if err := d.Admin(ctx, http.MethodDelete, "/admin/counters", nil, nil); err != nil {
		return r, err
	}
	before, err := b.peerMetric(ctx, `controller_runtime_reconcile_total{controller="managed/request`)
	if err != nil {
		return r, err
	}
	cpuBefore := b.cpu()
	_, peerCPU := procStats(p.proc.PID())
	start := time.Now()
	stall := max(3*poll, 2*time.Minute)
	ready, err := b.createRequests(ctx, p, manifest{API: d.URL, NS: ns, UserID: alice}, sh.Teams, r.MRs, stall)
	if err != nil {
		return r, err
	}
	end := time.Now()
	r.NotReady = r.MRs - len(ready)
	if len(ready) == 0 {
		// NOTE: reported, not an error: provider-http 1.0.14 writes a
		// POST's answer with one status update and no retry, so under load
		// (100 reconciles a second, N=1,000) a conflict loses every team's
		// id, and its next POST meets 409 for ever.
		b.logf("no Request of %s turned Ready within %s; see %s", ns, stall, filepath.Join(b.stack.Run, "provider-http.log"))
	} else {
		if r.NotReady > 0 {
			b.logf("%d of %d Requests not Ready, none more for %s: timed to the last that was", r.NotReady, r.MRs, stall)
			end = slices.MaxFunc(ready, time.Time.Compare)
		}
		r.ReadySeconds = end.Sub(start).Seconds()
		r.P50, r.P95, r.Max = percentiles(ready, start, time.Second)
	}
	after, err := b.peerMetric(ctx, `controller_runtime_reconcile_total{controller="managed/request`)
	if err != nil {
		return r, err
	}
	if err := b.created(ctx, &r, after-before, cpuBefore); err != nil {
		return r, err
	}
	_, peerCPUAfter := procStats(p.proc.PID())
	r.CreateCPUSeconds["provider"] = peerCPUAfter - peerCPU
	b.logf("%d of %d Requests Ready in %.1fs (CPU seconds meanwhile: %s); at rest for two polls", len(ready), r.MRs, r.ReadySeconds, cpuSeconds(r.CreateCPUSeconds))

	if err := b.atRest(ctx, &r, poll, 2, nil); err != nil {
		return r, err
	}
	if r.Leaks, err = b.leaks(ctx, ns); err != nil {
		return r, err
	}
	r.ProviderPeakRSSMiB, r.ProviderCPUSeconds = procStats(p.proc.PID())
	if withTrials {
		s, err := b.peerSubject(ctx, p, ns, poll, args)
		if err != nil {
			return r, err
		}
		if r.Behaviours, err = b.trials(ctx, s, r.Leaks); err != nil {
			return r, err
		}
	}

	start = time.Now()
	left, err := b.deleteRequests(ctx, ns, stall)
	if err != nil {
		return r, err
	}
	r.DeleteSeconds = time.Since(start).Seconds()
	r.LeftAfterDelete = left
	b.logf("deleted in %.1fs (%d Requests or server teams left)", r.DeleteSeconds, left)
	return r, nil
}

// deleteRequests deletes ns's Requests, one delete each with eight
// writers, and waits until they and the server's teams of ns are gone, or
// none more went for stall. Then it counts what is left, and takes the
// finalizers off the Requests left, as their owner would have to.
func (b *bench) deleteRequests(ctx context.Context, ns string, stall time.Duration) (int, error) {
	items, err := b.requests(ctx, ns)
	if err != nil {
		return 0, err
	}
	objs := make([]client.Object, 0, len(items))
	for i := range items {
		objs = append(objs, items[i].DeepCopy())
	}
	if err := b.each(objs, func(o client.Object) error { return client.IgnoreNotFound(b.kube.Delete(ctx, o)) }); err != nil {
		return 0, err
	}
	progress, fewest := time.Now(), -1
	for ; ; time.Sleep(time.Second) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		items, err := b.requests(ctx, ns)
		if err != nil {
			return 0, err
		}
		teams, err := b.serverTeams(ctx, ns)
		if err != nil {
			return 0, err
		}
		left := len(items) + teams
		if fewest < 0 || left < fewest {
			progress, fewest = time.Now(), left
		}
		if left == 0 {
			return 0, nil
		}
		if time.Since(progress) > stall {
			objs = objs[:0]
			for i := range items {
				objs = append(objs, items[i].DeepCopy())
			}
			return left, b.each(objs, func(o client.Object) error {
				return client.IgnoreNotFound(b.kube.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
			})
		}
	}
}

// serverTeams counts the server's teams of ns.
func (b *bench) serverTeams(ctx context.Context, ns string) (int, error) {
	st, err := b.stack.Double.State(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range st.Teams {
		if strings.HasPrefix(t.Name, ns+" ") {
			n++
		}
	}
	return n, nil
}

// leaks counts the once-shown integration keys the double issued that
// appear anywhere in ns's objects as `kubectl get -o yaml` shows them,
// Secrets aside: status, annotations, events.
func (b *bench) leaks(ctx context.Context, ns string) (int, error) {
	issued, err := b.stack.Double.Issued(ctx)
	if err != nil {
		return 0, err
	}
	var all strings.Builder
	for _, kind := range []string{"requests.http.m.crossplane.io", "integrations.terdut.ryuvia.com", "events"} {
		out, err := b.stack.Kubectl(ctx, nil, "get", kind, "-n", ns, "-o", "yaml")
		if err != nil && !strings.Contains(out, "the server doesn't have a resource type") {
			return 0, err
		}
		all.WriteString(out)
	}
	text := all.String()
	n := 0
	for _, k := range issued {
		if k != "" && strings.Contains(text, k) {
			n++
		}
	}
	return n, nil
}

// peers runs the compared shape of plan on provider-http twice: with its
// defaults, as a user would, and tuned to ours' poll and reconcile rate,
// so that the ratio is not a matter of flags; the tuned run is tried for
// the behaviours.
func (b *bench) peers(ctx context.Context, plan []step) ([]result, error) {
	var sh shape
	for _, p := range plan {
		if p.trials {
			sh = p.shape
		}
	}
	p, err := b.newPeer(ctx)
	if err != nil {
		return nil, err
	}
	defer b.stopPeer(p)
	// Ours is not running meanwhile: each run has the machine to itself.
	b.stack.StopProvider()
	defaults, err := b.peerRun(ctx, p, "peer-defaults", sh, "provider-http "+stack.ProviderHTTPVersion+", its defaults", time.Minute, false)
	if err != nil {
		return nil, err
	}
	printRow(os.Stderr, defaults)
	tuned, err := b.peerRun(ctx, p, "peer-tuned", sh, "provider-http "+stack.ProviderHTTPVersion+", tuned", b.poll, true,
		"--poll="+b.poll.String(), "--max-reconcile-rate="+strconv.Itoa(b.rate))
	if err != nil {
		return nil, err
	}
	printRow(os.Stderr, tuned)
	return []result{defaults, tuned}, nil
}

// createRequests creates the teams' Requests of m.NS and, as each team
// reports its id, its dependents; it returns when want are Ready, with
// when each turned Ready, or when none more turned Ready for stall (a
// Request that lost the id its POST returned never does).
func (b *bench) createRequests(ctx context.Context, p *peer, m manifest, teams, want int, stall time.Duration) ([]time.Time, error) {
	var objs []client.Object
	for i := range teams {
		m.I = i
		t, err := m.objects("team")
		if err != nil {
			return nil, err
		}
		objs = append(objs, t...)
	}
	made := map[int]bool{}
	progress, most := time.Now(), 0
	for ; ; time.Sleep(time.Second) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := b.createAll(ctx, objs); err != nil {
			return nil, err
		}
		items, err := b.requests(ctx, m.NS)
		if err != nil {
			return nil, err
		}
		var ready []time.Time
		objs = objs[:0]
		for i := range items {
			ok, at, id := requestState(&items[i])
			if !ok {
				continue
			}
			ready = append(ready, at)
			if t, err := strconv.Atoi(strings.TrimPrefix(items[i].GetName(), "t")); err == nil && id > 0 && !made[t] {
				made[t] = true
				m.I, m.TeamID = t, id
				deps, err := m.objects("dependents")
				if err != nil {
					return nil, err
				}
				objs = append(objs, deps...)
			}
		}
		if len(ready) > most {
			progress, most = time.Now(), len(ready)
		}
		switch {
		case len(ready) >= want, time.Since(progress) > stall:
			return ready, nil
		case p.proc.Exited():
			return nil, errors.New("provider-http exited")
		}
	}
}
