package main

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// report is the whole benchmark, as JSON.
type report struct {
	Date          string   `json:"date"`
	CPUs          int      `json:"cpus"`
	Poll          string   `json:"poll"`
	Latency       string   `json:"doubleLatency"`
	ProviderFlags []string `json:"providerFlags"`
	Results       []result `json:"results"`
	Ratios        []ratio  `json:"naiveOverShared"`
	Targets       []target `json:"targets"`
	Noisy         []noisy  `json:"noisyNeighbour,omitempty"`
	// Discovery is cmd/discover's reading of a server made by hand.
	Discovery *discovery `json:"discovery,omitempty"`
	// Peers is the compared shape on provider-terdut and on provider-http
	// (its defaults, then tuned), from the same run.
	Peers []peerRow `json:"peers,omitempty"`
}

// A peerRow is one provider's run of the compared shape, with its ratios
// to provider-terdut's (peer / ours: above 1 is worse for the peer).
type peerRow struct {
	Provider          string      `json:"provider"`
	Args              string      `json:"args"`
	ReadySeconds      float64     `json:"readySeconds"`
	P95               float64     `json:"readyP95Seconds"`
	RequestsPerMRPoll float64     `json:"requestsPerMRPerPoll"`
	BytesPerMRPoll    float64     `json:"bytesPerMRPerPoll"`
	PeakRSSMiB        float64     `json:"peakRSSMiB"`
	CreateCPUSeconds  float64     `json:"createCPUSeconds"`
	DeleteSeconds     float64     `json:"deleteSeconds"`
	MRs               int         `json:"mrs"`
	NotReady          int         `json:"notReady"`
	LeftAfterDelete   int         `json:"leftAfterDelete"`
	Ratios            []float64   `json:"ratiosToOurs,omitempty"`
	Behaviours        []behaviour `json:"behaviours,omitempty"`
}

// addPeers puts provider-terdut's run of the peers' shape beside theirs.
func (r *report) addPeers(peers []result) {
	if len(peers) == 0 {
		return
	}
	row := func(res result) peerRow {
		name := res.Provider
		if name == "" {
			name = "provider-terdut"
		}
		return peerRow{
			Provider: name, Args: res.ProviderArgs, ReadySeconds: res.ReadySeconds, P95: res.P95,
			RequestsPerMRPoll: res.RequestsPerMRPoll, BytesPerMRPoll: res.BytesPerMRPerPoll, PeakRSSMiB: res.ProviderPeakRSSMiB,
			CreateCPUSeconds: res.CreateCPUSeconds["provider"], DeleteSeconds: res.DeleteSeconds, Behaviours: res.Behaviours,
			MRs: res.MRs, NotReady: res.NotReady, LeftAfterDelete: res.LeftAfterDelete,
		}
	}
	var ours *peerRow
	for _, res := range r.Results {
		if len(res.Behaviours) > 0 && res.Shape == peers[0].Shape {
			o := row(res)
			o.Args = strings.Join(r.ProviderFlags, " ")
			ours = &o
		}
	}
	if ours == nil {
		return
	}
	r.Peers = append(r.Peers, *ours)
	for _, p := range peers {
		pr := row(p)
		if pr.compared() {
			pr.Ratios = []float64{
				div(pr.ReadySeconds, ours.ReadySeconds), div(pr.P95, ours.P95), div(pr.RequestsPerMRPoll, ours.RequestsPerMRPoll),
				div(pr.BytesPerMRPoll, ours.BytesPerMRPoll), div(pr.PeakRSSMiB, ours.PeakRSSMiB), div(pr.CreateCPUSeconds, ours.CreateCPUSeconds), div(pr.DeleteSeconds, ours.DeleteSeconds),
			}
		}
		r.Peers = append(r.Peers, pr)
	}
}

// compared reports whether a run did the work it is compared on: at least
// 95% of its objects turned Ready. A run whose objects mostly never did
// (provider-http tuned: 980 of 1,000) did less work, faster and cheaper at
// rest; a ratio to it would read as a win.
func (p peerRow) compared() bool {
	return p.NotReady*20 <= p.MRs
}

// noneReady reports whether none of the run's objects turned Ready (its
// time to Ready is then not a time).
func (p peerRow) noneReady() bool {
	return p.ReadySeconds == 0 && p.NotReady > 0
}

const peerFormat = "%-44s %8s %6s %10s %10s %9s %8s %7s %9s %6s\n"

// printPeers prints the peers' table, ratios under each peer, then the
// behaviours side by side.
func printPeers(w io.Writer, peers []peerRow) {
	_, _ = fmt.Fprintf(w, "\nside by side with crossplane-contrib's provider-http (%s, same double, control plane and run):\n", "the compared shape")
	_, _ = fmt.Fprintf(w, peerFormat, "provider", "ready s", "p95 s", "req/MR", "bytes/MR", "peak RSS", "CPU s", "del s", "not Ready", "left")
	_, _ = fmt.Fprintf(w, peerFormat, "", "", "", "per poll", "per poll", "MiB", "creating", "", "", "")
	for _, p := range peers {
		ready, p95 := fmt.Sprintf("%.1f", p.ReadySeconds), fmt.Sprintf("%.0f", p.P95)
		if p.noneReady() {
			ready, p95 = "none", "-"
		}
		_, _ = fmt.Fprintf(w, peerFormat, p.Provider, ready, p95, fmt.Sprintf("%.3f", p.RequestsPerMRPoll),
			fmt.Sprintf("%.0f", p.BytesPerMRPoll), fmt.Sprintf("%.1f", p.PeakRSSMiB), fmt.Sprintf("%.1f", p.CreateCPUSeconds), fmt.Sprintf("%.1f", p.DeleteSeconds),
			strconv.Itoa(p.NotReady), strconv.Itoa(p.LeftAfterDelete))
		if len(p.Ratios) == 7 {
			x := make([]any, 0, 10)
			x = append(x, "  x provider-terdut's")
			for _, v := range p.Ratios {
				if v == 0 {
					x = append(x, "-")
					continue
				}
				x = append(x, fmt.Sprintf("x%.2f", v))
			}
			x = append(x, "", "")
			_, _ = fmt.Fprintf(w, peerFormat, x...)
		}
		if !p.compared() {
			_, _ = fmt.Fprintf(w, "  x provider-terdut's: not compared, %d of %d never Ready\n", p.NotReady, p.MRs)
		}
		if p.Args != "" {
			_, _ = fmt.Fprintf(w, "  (flags: %s)\n", p.Args)
		}
	}
	_, _ = fmt.Fprintln(w, "\nbehaviour a user would notice (yes = what a user wants):")
	for _, p := range peers {
		for _, b := range p.Behaviours {
			_, _ = fmt.Fprintf(w, "  %-58s %-40s %-3s %s  [%s]\n", b.What, p.Provider, yesNo(b.Good), b.Found, b.How)
		}
	}
}

// ratio compares a naive run with the shared one of the same shape.
type ratio struct {
	Shape        string  `json:"shape"`
	GETs         float64 `json:"getsPerMRPerPoll"`
	Bytes        float64 `json:"bytesPerMRPerPoll"`
	ReadySeconds float64 `json:"readySeconds"`
	CPUSeconds   float64 `json:"cpuSeconds"`
}

// target is one of issue 10's targets and what was measured.
type target struct {
	What     string `json:"what"`
	Want     string `json:"want"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

func newReport(results []result, poll, latency time.Duration, flags []string) report {
	r := report{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Poll: poll.String(), Latency: latency.String(), ProviderFlags: flags, Results: results}
	for _, n := range results {
		if !n.Naive {
			continue
		}
		for _, s := range results {
			if s.Naive || s.Shape != n.Shape || s.ForeignSecrets > 0 {
				continue
			}
			r.Ratios = append(r.Ratios, ratio{
				Shape: s.Shape.Name, GETs: div(n.GETsPerMRPerPoll, s.GETsPerMRPerPoll), Bytes: div(n.BytesPerMRPerPoll, s.BytesPerMRPerPoll),
				ReadySeconds: div(n.ReadySeconds, s.ReadySeconds), CPUSeconds: div(n.ProviderCPUSeconds, s.ProviderCPUSeconds),
			})
		}
	}
	for _, s := range results {
		if s.Naive {
			continue
		}
		r.Targets = append(r.Targets,
			target{What: s.Shape.Name + ": every MR checked each poll at rest", Want: ">= 0.95", Measured: fmt.Sprintf("%.2f checks per MR per poll", s.ChecksPerMRPerPoll), Met: s.ChecksPerMRPerPoll >= 0.95},
			target{What: s.Shape.Name + ": GETs per MR per poll at rest", Want: fmt.Sprintf("<= %.3f +5%%", s.Shape.Floor()), Measured: fmt.Sprintf("%.3f (the API's floor for this shape: one list a team's kind a poll)", s.GETsPerMRPerPoll), Met: s.GETsPerMRPerPoll <= 1.05*s.Shape.Floor()})
		switch {
		case s.ForeignSecrets > 0:
			for _, w := range results {
				if w.Naive || w.ForeignSecrets > 0 || w.Shape != s.Shape {
					continue
				}
				r.Targets = append(r.Targets, target{
					What: fmt.Sprintf("%s: peak RSS with %d foreign Secrets", s.Shape.Name, s.ForeignSecrets), Want: "<= +10%",
					Measured: fmt.Sprintf("%.1f MiB vs %.1f MiB without (%+.1f%%)", s.ProviderPeakRSSMiB, w.ProviderPeakRSSMiB, 100*(s.ProviderPeakRSSMiB/w.ProviderPeakRSSMiB-1)),
					Met:      s.ProviderPeakRSSMiB <= 1.1*w.ProviderPeakRSSMiB,
				})
			}
			continue
		case s.MRs >= 5000:
			r.Targets = append(r.Targets,
				target{What: s.Shape.Name + ": all Ready", Want: "<= 150 s", Measured: fmt.Sprintf("%.1f s", s.ReadySeconds), Met: s.ReadySeconds <= 150},
				target{What: s.Shape.Name + ": all deleted", Want: "<= 150 s", Measured: fmt.Sprintf("%.1f s", s.DeleteSeconds), Met: s.DeleteSeconds <= 150},
				target{What: s.Shape.Name + ": provider peak RSS", Want: "<= 160 MiB", Measured: fmt.Sprintf("%.1f MiB", s.ProviderPeakRSSMiB), Met: s.ProviderPeakRSSMiB <= 160})
		case s.MRs >= 1000:
			r.Targets = append(r.Targets,
				target{What: s.Shape.Name + ": all Ready", Want: "<= 60 s", Measured: fmt.Sprintf("%.1f s", s.ReadySeconds), Met: s.ReadySeconds <= 60},
				target{What: s.Shape.Name + ": all deleted", Want: "<= 60 s", Measured: fmt.Sprintf("%.1f s", s.DeleteSeconds), Met: s.DeleteSeconds <= 60},
				target{What: s.Shape.Name + ": provider peak RSS", Want: "<= 80 MiB", Measured: fmt.Sprintf("%.1f MiB", s.ProviderPeakRSSMiB), Met: s.ProviderPeakRSSMiB <= 80})
		}
		if st := s.Storm; st != nil {
			r.Targets = append(r.Targets, target{What: s.Shape.Name + ": requests a second in a 429 storm", Want: fmt.Sprintf("<= %d (stated)", st.Limit), Measured: fmt.Sprintf("%d (max of %d s), %d answered 429, %d MRs Synced=False at most", st.MaxPerSecond, st.Seconds, st.Throttled, st.MRsNotSynced), Met: st.MaxPerSecond <= st.Limit})
		}
	}
	return r
}

// addNoisyTargets adds the noisy neighbour's targets.
func (r *report) addNoisyTargets() {
	for _, n := range r.Noisy {
		if n.FirstComeFirstServed {
			continue
		}
		r.Targets = append(r.Targets,
			target{What: "noisy neighbour: B's p95 to Ready beside A / alone", Want: "<= 2x", Measured: fmt.Sprintf("%.1f s / %.1f s = x%.2f", n.BP95, n.BAloneP95, n.Ratio), Met: n.Ratio <= 2},
			target{What: "noisy neighbour: requests/s to the server at rest", Want: fmt.Sprintf("<= %d (budget)", n.Budget), Measured: fmt.Sprintf("%.1f mean, %d at most in any second of the run", n.RestPerSecond, n.MaxPerSecond), Met: n.RestPerSecond <= float64(n.Budget)})
	}
}

// missed fails for the targets not met: every target printed is a goal.
func (r *report) missed() error {
	var missed []string
	for _, t := range r.Targets {
		if !t.Met {
			missed = append(missed, t.What)
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("%d targets not met: %s", len(missed), strings.Join(missed, "; "))
	}
	return nil
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func mode(naive bool) string {
	if naive {
		return "naive"
	}
	return "shared"
}

const rowFormat = "%-44s %5s %-6s %7s %15s %6s %7s %8s %10s %9s %7s %7s\n"

func printHeader(w io.Writer) {
	_, _ = fmt.Fprintf(w, rowFormat, "shape", "MRs", "mode", "ready s", "p50/p95/max s", "rec/s", "checks", "GET/MR", "bytes/MR", "peak RSS", "CPU s", "del s")
	_, _ = fmt.Fprintf(w, rowFormat, "", "", "", "", "per MR", "", "/MR/poll", "per poll", "per poll", "MiB", "", "")
}

func printRow(w io.Writer, r result) {
	name := r.Shape.Name
	if r.ForeignSecrets > 0 {
		name += fmt.Sprintf(" +%d foreign Secrets", r.ForeignSecrets)
	}
	m := mode(r.Naive)
	if r.Provider != "" {
		m = "peer"
		name += " on " + strings.TrimPrefix(r.Provider, "provider-http "+"")
	}
	_, _ = fmt.Fprintf(w, rowFormat, name, fmt.Sprint(r.MRs), m, fmt.Sprintf("%.1f", r.ReadySeconds),
		fmt.Sprintf("%.0f/%.0f/%.0f", r.P50, r.P95, r.Max), fmt.Sprintf("%.1f", r.ReconcilesPerSecond), fmt.Sprintf("%.2f", r.ChecksPerMRPerPoll),
		fmt.Sprintf("%.3f", r.GETsPerMRPerPoll), fmt.Sprintf("%.0f", r.BytesPerMRPerPoll),
		fmt.Sprintf("%.1f", r.ProviderPeakRSSMiB), fmt.Sprintf("%.1f", r.ProviderCPUSeconds), fmt.Sprintf("%.1f", r.DeleteSeconds))
}

func printReport(w io.Writer, r report) {
	_, _ = fmt.Fprintf(w, "make bench-scale: %s, %d CPUs, double latency %s, provider %s\n\n", r.Date, r.CPUs, r.Latency, strings.Join(r.ProviderFlags, " "))
	printHeader(w)
	for _, res := range r.Results {
		printRow(w, res)
	}
	if r.Discovery != nil {
		_, _ = fmt.Fprintf(w, "\n%s\n", r.Discovery.describe())
	}
	_, _ = fmt.Fprintln(w, "\nrequests at rest by route (shared, per run over three polls):")
	for _, res := range r.Results {
		if !res.Naive {
			_, _ = fmt.Fprintf(w, "  %s: %s\n", res.Shape.Name, strings.Join(routes(res.RestRequests), ", "))
		}
	}
	_, _ = fmt.Fprintln(w, "\nrequests while creating, by route:")
	for _, res := range r.Results {
		_, _ = fmt.Fprintf(w, "  %s (%s): %s\n", res.Shape.Name, mode(res.Naive), strings.Join(routes(res.CreateRequests), ", "))
	}
	_, _ = fmt.Fprintf(w, "\nCPU seconds while creating (the run's wall seconds x %d cores are all there are):\n", runtime.NumCPU())
	for _, res := range r.Results {
		_, _ = fmt.Fprintf(w, "  %s (%s, %.1f s): %s\n", res.Shape.Name, mode(res.Naive), res.ReadySeconds, cpuSeconds(res.CreateCPUSeconds))
	}
	_, _ = fmt.Fprintln(w, "\nAPI server requests per MR while creating, and per MR per poll at rest (everyone's, watches aside):")
	for _, res := range r.Results {
		if res.CreateAPIRequestsPerMR != nil {
			_, _ = fmt.Fprintf(w, "  %s (%s), creating: %s\n", res.Shape.Name, mode(res.Naive), perMR(res.CreateAPIRequestsPerMR))
		}
		if res.RestAPIRequestsPerMRPerPoll != nil {
			_, _ = fmt.Fprintf(w, "  %s (%s), at rest: %s\n", res.Shape.Name, mode(res.Naive), perMR(res.RestAPIRequestsPerMRPerPoll))
		}
	}
	for _, res := range r.Results {
		if res.SizedReconcileRate > 0 {
			_, _ = fmt.Fprintf(w, "  %s ran with --max-reconcile-rate=%d, sized as docs/performance.md says (MRs / poll seconds, with a fifth more room)\n", res.Shape.Name, res.SizedReconcileRate)
		}
	}
	_, _ = fmt.Fprintln(w, "\nnaive / shared, side by side:")
	for _, x := range r.Ratios {
		_, _ = fmt.Fprintf(w, "  %s: GETs per MR per poll x%.2f, bytes per MR per poll x%.2f, time to Ready x%.2f, CPU x%.2f\n", x.Shape, x.GETs, x.Bytes, x.ReadySeconds, x.CPUSeconds)
	}
	if len(r.Noisy) > 0 {
		_, _ = fmt.Fprintln(w, "\nnoisy neighbour (namespace A creates, then B):")
		for _, n := range r.Noisy {
			_, _ = fmt.Fprintf(w, "  %s\n", n.describe())
		}
	}
	if len(r.Peers) > 0 {
		printPeers(w, r.Peers)
	}
	_, _ = fmt.Fprintln(w, "\ntargets:")
	for _, t := range r.Targets {
		met := "met"
		if !t.Met {
			met = "NOT met"
		}
		_, _ = fmt.Fprintf(w, "  %-62s want %-14s measured %s: %s\n", t.What, t.Want, t.Measured, met)
	}
}

// plot draws time to Ready and requests at rest against N (the mixed
// shape, shared), as an SVG of two panels.
func plot(results []result, peers []peerRow) string {
	var pts []result
	for _, r := range results {
		if !r.Naive && r.Shape.Policy && r.ForeignSecrets == 0 {
			pts = append(pts, r)
		}
	}
	const w, h, pad = 360, 240, 44
	panel := func(x0 int, title, unit string, val func(result) float64) string {
		maxX, maxY := 1.0, 1.0
		for _, p := range pts {
			maxX, maxY = max(maxX, float64(p.MRs)), max(maxY, val(p))
		}
		maxY *= 1.15
		sx := func(v float64) float64 { return float64(x0+pad) + v/maxX*float64(w-2*pad) }
		sy := func(v float64) float64 { return float64(h-pad) - v/maxY*float64(h-2*pad) }
		var b strings.Builder
		fmt.Fprintf(&b, `<text x="%d" y="20" font-size="13" font-weight="bold">%s</text>`, x0+pad, title)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, x0+pad, h-pad, x0+w-pad, h-pad)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, x0+pad, pad, x0+pad, h-pad)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">managed resources (N)</text>`, x0+w/2-50, h-8)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">%s</text>`, x0+4, pad-8, unit)
		line := make([]string, 0, len(pts))
		for _, p := range pts {
			x, y := sx(float64(p.MRs)), sy(val(p))
			line = append(line, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="steelblue"/>`, x, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">%g</text>`, x-10, y-8, round(val(p)))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10">%d</text>`, x-10, h-pad+14, p.MRs)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="steelblue" stroke-width="2"/>`, strings.Join(line, " "))
		return b.String()
	}
	bars := func(x0 int) string {
		if len(peers) == 0 {
			return ""
		}
		maxY := 1.0
		for _, p := range peers {
			maxY = max(maxY, p.ReadySeconds)
		}
		var b strings.Builder
		fmt.Fprintf(&b, `<text x="%d" y="20" font-size="13" font-weight="bold">Compared shape: seconds until all Ready</text>`, x0+pad)
		bw := (w - 2*pad) / len(peers)
		for i, p := range peers {
			bh := p.ReadySeconds / maxY * float64(h-2*pad-20)
			x := x0 + pad + i*bw
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="steelblue"/>`, x+4, float64(h-pad)-bh, bw-8, bh)
			value := fmt.Sprint(round(p.ReadySeconds))
			if p.noneReady() {
				value = "none Ready"
			}
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10">%s</text>`, x+6, float64(h-pad)-bh-4, value)
			label := strings.TrimPrefix(strings.TrimPrefix(p.Provider, "provider-http "), "v")
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9">%s</text>`, x+2, h-pad+14, label)
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, x0+pad, h-pad, x0+w-pad, h-pad)
		return b.String()
	}
	width := 2 * w
	if len(peers) > 0 {
		width = 3 * w
	}
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif"><rect width="100%%" height="100%%" fill="white"/>%s%s%s</svg>`+"\n",
		width, h,
		panel(0, "Time until all Ready", "seconds", func(r result) float64 { return r.ReadySeconds }),
		panel(w, "GET requests per poll at rest", "requests", func(r result) float64 { return r.GETsPerMRPerPoll * float64(r.MRs) }),
		bars(2*w))
}

func round(v float64) float64 { return float64(int(v*10+0.5)) / 10 }
