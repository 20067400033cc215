package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
)

// noisy is the noisy-neighbour run: namespace A creates many MRs, some of
// them annotated to be polled every 100ms, and namespace B then creates a
// few. B's time to Ready beside A, against B alone, says whether one tenant
// can starve another.
type noisy struct {
	// FirstComeFirstServed: the provider ran --first-come-first-served
	// (crossplane-runtime's global limiter and queue), the "before".
	FirstComeFirstServed bool `json:"firstComeFirstServed"`
	AMRs                 int  `json:"aMRs"`
	AFast                int  `json:"aFastPolled"`
	BMRs                 int  `json:"bMRs"`
	// BAloneP95 and BP95 are B's p95 seconds to Ready, alone and beside A.
	BAloneP95 float64 `json:"bAloneP95Seconds"`
	BP95      float64 `json:"bBesideAP95Seconds"`
	BMax      float64 `json:"bBesideAMaxSeconds"`
	Ratio     float64 `json:"ratio"`
	// AReadySeconds is how long A took to be all Ready.
	AReadySeconds float64 `json:"aReadySeconds"`
	// Requests a second to the server: at most in any second of the run,
	// and the mean over 30 s at rest with A's fast-polled MRs.
	MaxPerSecond  int     `json:"maxRequestsPerSecond"`
	RestPerSecond float64 `json:"restRequestsPerSecond"`
	// Budget is the provider's --max-reconcile-rate.
	Budget int `json:"reconcileBudget"`
	// BAloneStages and BStages are where B's time went, alone and beside
	// A: per kind, the latest time (s, to the ms) each stage was reached after B's
	// first create (stages).
	BAloneStages string `json:"bAloneStages"`
	BStages      string `json:"bBesideAStages"`
}

const fastTeams = 5

// noisies runs the noisy neighbour with aMRs in A (none if 0), and also
// first-come-first-served if unfair.
func (b *bench) noisies(ctx context.Context, aMRs int, unfair bool) ([]noisy, error) {
	if aMRs <= 0 {
		return nil, nil
	}
	modes := []bool{false}
	if unfair {
		modes = append(modes, true)
	}
	var out []noisy
	for _, m := range modes {
		n, err := b.noisy(ctx, aMRs, m)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func (b *bench) noisy(ctx context.Context, aMRs int, unfair bool) (noisy, error) {
	n := noisy{FirstComeFirstServed: unfair, Budget: b.rate}
	suffix := "fair"
	var extra []string
	if unfair {
		suffix = "fcfs"
		extra = append(extra, "--first-come-first-served")
	}
	b.logf("noisy neighbour (%s): A %d MRs + %d polled every 100ms, then B %d", suffix, aMRs, fastTeams*4, fastTeams*4)
	b.stack.StopProvider()
	if err := b.stack.StartProvider(ctx, extra...); err != nil {
		return n, err
	}
	time.Sleep(5 * time.Second)
	shB := shape{Name: "B", Teams: fastTeams, Policy: true, Switches: 1, Integrations: 1}
	n.BMRs = shB.MRs()

	alone := "noisy-b-alone-" + suffix
	if err := b.namespace(ctx, alone); err != nil {
		return n, err
	}
	start := time.Now()
	if err := b.create(ctx, alone, shB); err != nil {
		return n, err
	}
	ready, err := b.waitReady(ctx, alone, n.BMRs, 5*time.Minute)
	if err != nil {
		return n, err
	}
	_, n.BAloneP95, _ = percentiles(ready, start, time.Millisecond)
	if n.BAloneStages, err = b.stages(ctx, alone, start); err != nil {
		return n, err
	}
	b.logf("noisy neighbour (%s): B alone: %s", suffix, n.BAloneStages)
	if err := b.deleteAll(ctx, alone); err != nil {
		return n, err
	}
	if err := b.cleared(ctx, alone); err != nil {
		return n, err
	}

	nsA, nsB := "noisy-a-"+suffix, "noisy-b-"+suffix
	for _, ns := range []string{nsA, nsB} {
		if err := b.namespace(ctx, ns); err != nil {
			return n, err
		}
	}
	shA := shape{Name: "A", Teams: aMRs/4 + fastTeams, Policy: true, Switches: 1, Integrations: 1}
	objs := objects(nsA, shA)
	n.AMRs = len(objs)
	// The last teams' MRs ask to be polled every 100ms.
	for _, o := range objs[len(objs)-fastTeams*4:] {
		meta.AddAnnotations(o, map[string]string{meta.AnnotationKeyPollInterval: "100ms"})
		n.AFast++
	}
	stop, perSecond := b.sample(ctx)
	startA := time.Now()
	if err := b.createAll(ctx, objs); err != nil {
		return n, err
	}
	startB := time.Now()
	if err := b.create(ctx, nsB, shB); err != nil {
		return n, err
	}
	ready, err = b.waitReady(ctx, nsB, n.BMRs, 10*time.Minute)
	if err != nil {
		return n, err
	}
	_, n.BP95, n.BMax = percentiles(ready, startB, time.Millisecond)
	if n.BStages, err = b.stages(ctx, nsB, startB); err != nil {
		return n, err
	}
	b.logf("noisy neighbour (%s): B beside A: %s", suffix, n.BStages)
	if _, err := b.waitReady(ctx, nsA, n.AMRs, 15*time.Minute); err != nil {
		return n, err
	}
	n.AReadySeconds = time.Since(startA).Seconds()
	restFrom := len(perSecond())
	time.Sleep(30 * time.Second)
	series := stop()
	for _, v := range series {
		n.MaxPerSecond = max(n.MaxPerSecond, v)
	}
	rest := 0
	for _, v := range series[restFrom:] {
		rest += v
	}
	n.RestPerSecond = float64(rest) / float64(max(len(series)-restFrom, 1))
	n.Ratio = div(n.BP95, n.BAloneP95)
	b.logf("noisy neighbour (%s): B p95 %.1fs beside A, %.1fs alone (x%.2f); A Ready in %.0fs; at most %d requests/s, %.1f/s at rest",
		suffix, n.BP95, n.BAloneP95, n.Ratio, n.AReadySeconds, n.MaxPerSecond, n.RestPerSecond)
	for _, ns := range []string{nsB, nsA} {
		if err := b.deleteAll(ctx, ns); err != nil {
			return n, err
		}
		if err := b.cleared(ctx, ns); err != nil {
			return n, err
		}
	}
	return n, nil
}

// stages says where the time of ns's MRs went: per kind, the latest time
// after start (to the millisecond, as the bench's watch first showed it) at
// which its MRs were first written by the provider, had their external
// create pending and succeeded, and turned Ready and Synced.
func (b *bench) stages(ctx context.Context, ns string, start time.Time) (string, error) {
	after := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(start).Seconds()
	}
	var parts []string
	for _, l := range lists() {
		if err := b.list(ctx, l, ns); err != nil {
			return "", err
		}
		var touched, pending, succeeded, ready float64
		// NOTE: the cache's items carry no TypeMeta: the list's type names the kind.
		kind := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", l), "*v1alpha1."), "List")
		for _, mg := range l.GetItems() {
			m := b.readyAt.milestones(mg)
			touched = max(touched, after(m.touched))
			pending = max(pending, after(m.pending))
			succeeded = max(succeeded, after(m.succeeded))
			ready = max(ready, after(m.ready))
		}
		parts = append(parts, fmt.Sprintf("%s first written %.2f pending %.2f created on the server %.2f Ready %.2f", kind, touched, pending, succeeded, ready))
	}
	return strings.Join(parts, "; "), nil
}

// sample counts the double's requests to its API every second until stop,
// which returns the counts.
func (b *bench) sample(ctx context.Context) (stop func() []int, sofar func() []int) {
	var mu sync.Mutex
	var series []int
	done := make(chan struct{})
	var wg sync.WaitGroup
	total := func() int {
		c, err := b.stack.Double.Counters(ctx)
		if err != nil {
			return -1
		}
		t := 0
		for k, v := range c {
			if strings.Contains(k, " /api/") {
				t += v
			}
		}
		return t
	}
	_ = b.stack.Double.Admin(ctx, http.MethodDelete, "/admin/counters", nil, nil)
	wg.Go(func() {
		last := total()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				t := total()
				if t < 0 || last < 0 {
					last = t
					continue
				}
				mu.Lock()
				series = append(series, t-last)
				mu.Unlock()
				last = t
			}
		}
	})
	sofar = func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), series...)
	}
	return func() []int {
		close(done)
		wg.Wait()
		return sofar()
	}, sofar
}

// describe is the noisy run as one line.
func (n noisy) describe() string {
	mode := "shared between namespaces"
	if n.FirstComeFirstServed {
		mode = "first come, first served"
	}
	return fmt.Sprintf("%s: B (%d MRs) p95 %.1fs beside A (%d MRs, %d polled every 100ms), %.1fs alone: x%.2f; A Ready in %.0fs; requests/s to the server at most %d, %.1f at rest (reconcile budget %d/s)",
		mode, n.BMRs, n.BP95, n.AMRs, n.AFast, n.BAloneP95, n.Ratio, n.AReadySeconds, n.MaxPerSecond, n.RestPerSecond, n.Budget)
}
