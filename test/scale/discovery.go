package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/discover"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// discovery is the discovery of a server made by hand: how long it took
// and what it asked of the server.
type discovery struct {
	// Objects are the server's teams, policies, switches and integrations.
	Objects int     `json:"objects"`
	Seconds float64 `json:"seconds"`
	// Requests are the requests discovery sent; Writes those that were
	// not GETs, counted at the server.
	Requests int `json:"requests"`
	Writes   int `json:"writes"`
	Written  int `json:"written"`
}

func (d discovery) describe() string {
	return fmt.Sprintf("discovery of a %d-object server: %d MRs written in %.1f s, %d requests (%.2f per object), %d writes", d.Objects, d.Written, d.Seconds, d.Requests, float64(d.Requests)/float64(d.Objects), d.Writes)
}

// discovers is discoverServer's figures, printed; nil when objects is 0;
// an error when discovery wrote.
func (b *bench) discovers(ctx context.Context, objects int, latency time.Duration) (*discovery, error) {
	if objects <= 0 {
		return nil, nil //nolint:nilnil // Not asked for.
	}
	d, err := b.discoverServer(ctx, objects, latency)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(os.Stderr, d.describe())
	if d.Writes > 0 {
		return nil, fmt.Errorf("%s: discovery must only read", d.describe())
	}
	return &d, nil
}

// discoverServer makes objects/4 teams by hand on a double of its own (the
// same latency as the benchmark's), each with a policy, a switch and an
// integration, and discovers them.
func (b *bench) discoverServer(ctx context.Context, objects int, latency time.Duration) (discovery, error) {
	d, err := b.stack.StartDouble(ctx, "terdut-double-discovery", "-latency="+latency.String())
	if err != nil {
		return discovery{}, err
	}
	defer d.Process.Stop()
	var h terdutdouble.HandMade
	for i := range objects / 4 {
		h.Teams = append(h.Teams, terdutdouble.HandMadeTeam{
			Name:         fmt.Sprintf("team %04d", i),
			Policy:       &terdut.EscalationPolicy{RepeatCount: 1, Levels: []terdut.EscalationLevel{{Timeout: "5m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}}}}},
			Switches:     []terdut.DeadmanSwitch{{Matcher: "alertname=Watchdog", Timeout: "10m"}},
			Integrations: []terdut.Integration{{Kind: terdut.IntegrationAlertmanager, Name: "am"}},
		})
	}
	if err := d.Admin(ctx, http.MethodPost, "/admin/hand-made", h, nil); err != nil {
		return discovery{}, err
	}
	var before map[string]int
	if err := d.Admin(ctx, http.MethodGet, "/admin/counters", nil, &before); err != nil {
		return discovery{}, err
	}
	ro := &discover.ReadOnly{}
	c, err := terdut.New(terdut.Options{Endpoint: d.URL, Token: d.AdminKey, Wrap: ro.Around, ListMaxAge: time.Minute})
	if err != nil {
		return discovery{}, err
	}
	ref := xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
	start := time.Now()
	held, taken, err := discover.InCluster(ctx, b.kube, ref, "")
	if err != nil {
		return discovery{}, err
	}
	r, err := discover.Discover(ctx, c, discover.Options{ProviderConfig: ref, HomeNamespace: "crossplane-system", Held: held, Taken: taken})
	if err != nil {
		return discovery{}, err
	}
	out := discovery{Objects: 4 * (objects / 4), Seconds: time.Since(start).Seconds()}
	var after map[string]int
	if err := d.Admin(ctx, http.MethodGet, "/admin/counters", nil, &after); err != nil {
		return discovery{}, err
	}
	for route, n := range after {
		n -= before[route]
		out.Requests += n
		if len(route) < 4 || route[:4] != http.MethodGet+" " {
			out.Writes += n
		}
	}
	for _, n := range r.Written {
		out.Written += n
	}
	return out, nil
}
