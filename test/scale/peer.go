package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

// The peer is crossplane-contrib's provider-http: a user without a
// dedicated provider writes one Request per server object, with jq mappings
// for create, observe, update and remove. It runs out of cluster as the
// admin, as ours does in this benchmark, against the same double.

// requestGVK is provider-http's namespaced Request.
var requestGVK = schema.GroupVersionKind{Group: "http.m.crossplane.io", Version: "v1alpha2", Kind: "Request"}

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

// request is a Request named name in ns.
func request(ns, name string, forProvider map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"forProvider": forProvider},
	}}
	u.SetGroupVersionKind(requestGVK)
	return u
}

// headers are every Request's: the key from tokenSecret, the way
// provider-http's examples inject a token.
func headers() map[string]any {
	return map[string]any{
		"Content-Type":  []any{"application/json"},
		"Authorization": []any{"Bearer {{ " + tokenSecret + ":crossplane-system:token }}"},
	}
}

func body(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// byID is the jq of an object's URL by the id the server gave it.
const byID = `.payload.baseUrl + "/" + (.response.body.id | tostring)`

// teamRequest is team i of the mixed shape: POST /api/teams, observed by
// id, renamed by PUT, deleted by DELETE.
func teamRequest(api, ns string, i int) *unstructured.Unstructured {
	return request(ns, "t"+strconv.Itoa(i), map[string]any{
		"headers": headers(),
		"payload": map[string]any{"baseUrl": api + "/api/teams", "body": body(map[string]any{"name": fmt.Sprintf("%s team %d", ns, i)})},
		"mappings": []any{
			map[string]any{"action": "CREATE", "url": ".payload.baseUrl", "body": "{ name: .payload.body.name }"},
			map[string]any{"action": "OBSERVE", "url": byID},
			map[string]any{"action": "UPDATE", "url": byID, "body": "{ name: .payload.body.name }"},
			map[string]any{"action": "REMOVE", "url": byID},
		},
	})
}

// dependents are team i's policy, switch and integration, once the team
// Request has reported the server's id for it: provider-http has no
// references between Requests, so a user patches it in (a Composition's
// patch from the team's status). The policy names its user by id: the
// server's users list is another value only it knows, looked up by hand.
func dependents(api, ns string, i int, teamID, userID int64) []client.Object {
	team := fmt.Sprintf("%s/api/teams/%d", api, teamID)
	sw := fmt.Sprintf("t%d-sw0", i)
	in := fmt.Sprintf("t%d-in0", i)
	// The switches and integrations of a team have no GET of one: a
	// Request observes the team's list and finds its object by name.
	named := func(what string) string {
		return `.payload.body.name as $n | ` + what
	}
	return []client.Object{
		request(ns, fmt.Sprintf("t%d-policy", i), map[string]any{
			"headers": headers(),
			"payload": map[string]any{"baseUrl": team + "/escalation", "body": body(map[string]any{
				"repeat_count": 1,
				"levels":       []any{map[string]any{"timeout": "5m", "targets": []any{map[string]any{"kind": "oncall"}, map[string]any{"kind": "user", "user_id": userID}}}},
			})},
			// One policy per team, replaced by PUT; "deleting" it is a PUT
			// of an empty one.
			"mappings": []any{
				map[string]any{"action": "CREATE", "method": "PUT", "url": ".payload.baseUrl", "body": ".payload.body"},
				map[string]any{"action": "OBSERVE", "url": ".payload.baseUrl"},
				map[string]any{"action": "UPDATE", "method": "PUT", "url": ".payload.baseUrl", "body": ".payload.body"},
				map[string]any{"action": "REMOVE", "method": "PUT", "url": ".payload.baseUrl", "body": "{ repeat_count: 0, levels: [] }"},
			},
			"isRemovedCheck": map[string]any{"type": "CUSTOM", "logic": "(.response.body.levels // []) | length == 0"},
		}),
		request(ns, sw, map[string]any{
			"headers": headers(),
			"payload": map[string]any{"baseUrl": team + "/deadman/switches", "body": body(map[string]any{"name": sw, "matcher": "alertname=Watchdog,switch=" + sw, "timeout": "15m"})},
			"mappings": []any{
				map[string]any{"action": "CREATE", "url": ".payload.baseUrl", "body": ".payload.body"},
				map[string]any{"action": "OBSERVE", "url": ".payload.baseUrl"},
				map[string]any{"action": "UPDATE", "url": byID, "body": ".payload.body"},
				map[string]any{"action": "REMOVE", "url": byID},
			},
			"expectedResponseCheck": map[string]any{"type": "CUSTOM", "logic": `.payload.body as $w | any(.response.body[]?; .name == $w.name and .matcher == $w.matcher and .timeout == $w.timeout)`},
			"isRemovedCheck":        map[string]any{"type": "CUSTOM", "logic": named(`.response.statusCode == 404 or all(.response.body[]?; .name != $n)`)},
		}),
		request(ns, in, map[string]any{
			"headers": headers(),
			"payload": map[string]any{"baseUrl": team + "/integrations", "body": body(map[string]any{"kind": "alertmanager", "name": in})},
			"mappings": []any{
				map[string]any{"action": "CREATE", "url": ".payload.baseUrl", "body": ".payload.body"},
				map[string]any{"action": "OBSERVE", "url": ".payload.baseUrl"},
				map[string]any{"action": "UPDATE", "method": "PATCH", "url": byID, "body": "{ name: .payload.body.name }"},
				map[string]any{"action": "REMOVE", "url": byID},
			},
			"expectedResponseCheck": map[string]any{"type": "CUSTOM", "logic": named(`any(.response.body[]?; .name == $n)`)},
			"isRemovedCheck":        map[string]any{"type": "CUSTOM", "logic": named(`.response.statusCode == 404 or all(.response.body[]?; .name != $n)`)},
			// The once-shown webhook URL and key go to a Secret, the way its
			// documentation shows response data kept out of sight.
			"secretInjectionConfigs": []any{map[string]any{
				"secretRef":         map[string]any{"name": in + "-webhook", "namespace": ns},
				"setOwnerReference": true,
				"keyMappings": []any{
					map[string]any{"secretKey": "url", "responseJQ": ".body.url", "missingFieldStrategy": "preserve"},
					map[string]any{"secretKey": "key", "responseJQ": ".body.key", "missingFieldStrategy": "preserve"},
				},
			}},
		}),
	}
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
	l.SetGroupVersionKind(requestGVK.GroupVersion().WithKind("RequestList"))
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
	var alice int64
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
	var teams []client.Object
	for i := range sh.Teams {
		teams = append(teams, teamRequest(d.URL, ns, i))
	}
	if err := b.createAll(ctx, teams); err != nil {
		return r, err
	}
	// As each team reports its id, its dependents are created.
	made := map[string]bool{}
	var ready []time.Time
	for deadline := start.Add(30 * time.Minute); ; time.Sleep(time.Second) {
		items, err := b.requests(ctx, ns)
		if err != nil {
			return r, err
		}
		var next []client.Object
		ready = ready[:0]
		for i := range items {
			u := &items[i]
			ok, at, id := requestState(u)
			if ok {
				ready = append(ready, at)
			}
			n, isTeam := strings.CutPrefix(u.GetName(), "t")
			if i, err := strconv.Atoi(n); err == nil && isTeam && ok && id > 0 && !made[u.GetName()] {
				made[u.GetName()] = true
				next = append(next, dependents(d.URL, ns, i, id, alice)...)
			}
		}
		if err := b.createAll(ctx, next); err != nil {
			return r, err
		}
		if len(ready) >= r.MRs {
			break
		}
		if p.proc.Exited() {
			return r, errors.New("provider-http exited")
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d Requests Ready after 30 minutes", len(ready), r.MRs)
		}
	}
	r.ReadySeconds = time.Since(start).Seconds()
	r.P50, r.P95, r.Max = percentiles(ready, start)
	after, err := b.peerMetric(ctx, `controller_runtime_reconcile_total{controller="managed/request`)
	if err != nil {
		return r, err
	}
	r.ReconcilesPerSecond = float64(after-before) / r.ReadySeconds
	if r.CreateRequests, err = d.Counters(ctx); err != nil {
		return r, err
	}
	r.CreateCPUSeconds = map[string]float64{}
	for name, after := range b.cpu() {
		r.CreateCPUSeconds[name] = after - cpuBefore[name]
	}
	_, peerCPUAfter := procStats(p.proc.PID())
	r.CreateCPUSeconds["provider"] = peerCPUAfter - peerCPU
	b.logf("%d Requests Ready in %.1fs (CPU seconds meanwhile: %s); at rest for two polls", r.MRs, r.ReadySeconds, cpuSeconds(r.CreateCPUSeconds))

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
	if err := b.deleteRequests(ctx, ns); err != nil {
		return r, err
	}
	r.DeleteSeconds = time.Since(start).Seconds()
	b.logf("deleted in %.1fs", r.DeleteSeconds)
	return r, nil
}

// deleteRequests deletes ns's Requests, one delete each with eight
// writers, and waits until they and the server's teams of ns are gone.
func (b *bench) deleteRequests(ctx context.Context, ns string) error {
	items, err := b.requests(ctx, ns)
	if err != nil {
		return err
	}
	objs := make([]client.Object, 0, len(items))
	for i := range items {
		objs = append(objs, items[i].DeepCopy())
	}
	if err := b.each(ctx, objs, func(o client.Object) error { return client.IgnoreNotFound(b.kube.Delete(ctx, o)) }); err != nil {
		return err
	}
	for deadline := time.Now().Add(15 * time.Minute); ; time.Sleep(time.Second) {
		items, err := b.requests(ctx, ns)
		if err != nil {
			return err
		}
		left := len(items)
		st, err := b.stack.Double.State(ctx)
		if err != nil {
			return err
		}
		for _, t := range st.Teams {
			if strings.HasPrefix(t.Name, ns+" ") {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Requests or server teams of %s left after 15 minutes; see %s", left, ns, filepath.Join(b.stack.Run, "provider-http.log"))
		}
	}
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
