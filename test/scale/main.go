// Command scale is `make bench-scale`: provider-terdut with N managed
// resources on the local control plane, against the terdut-server double
// with added latency. For each run it measures the time until all are Ready
// (p50/p95/max per MR), reconciles per second, requests by route, requests
// and bytes per MR per poll at rest, the provider's peak RSS and CPU
// seconds, and the time until all are deleted; for N = 100, 300, 1,000 (how
// the cost grows), a shape of teams with 50 switches each, the same with the
// list sharing and index lookups off (--naive, side by side), and a 429
// storm. It prints a table and writes JSON and an SVG plot to _output/bench.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

// A shape is how the MRs are spread over teams.
type shape struct {
	// Name says it in the table.
	Name string `json:"name"`
	// Teams, and per team: a policy, switches and integrations.
	Teams        int  `json:"teams"`
	Policy       bool `json:"policy"`
	Switches     int  `json:"switchesPerTeam"`
	Integrations int  `json:"integrationsPerTeam"`
}

// A step is one run of the benchmark.
type step struct {
	shape shape
	// naive turns the list sharing and index lookups off (--naive).
	naive bool
	// storm adds a 429 storm at rest.
	storm bool
	// foreign is how many unrelated Secrets another namespace holds.
	foreign int
	// trials tries the behaviours compared with the peer.
	trials bool
}

// Floor is the fewest GETs per MR per poll that see every MR's drift within a
// poll: the API has no list across teams, so each team costs one GET of its
// policy, one list of its switches and one of its integrations (the teams
// and users lists are shared by all).
func (s shape) Floor() float64 {
	per := 0
	if s.Policy {
		per++
	}
	if s.Switches > 0 {
		per++
	}
	if s.Integrations > 0 {
		per++
	}
	return float64(s.Teams*per) / float64(s.MRs())
}

// MRs is how many managed resources the shape has.
func (s shape) MRs() int {
	per := 1 + s.Switches + s.Integrations
	if s.Policy {
		per++
	}
	return s.Teams * per
}

// parseSizes reads -n.
func parseSizes(ns string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 4 {
			return nil, fmt.Errorf("-n %q: want sizes of at least 4", ns)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// planFor is the benchmark's runs: the mixed shape at each size, the
// compared size also naive and beside foreign Secrets, and the wide shape.
func planFor(sizes []int, compareN, stormRPS int, naive, peer bool, foreign, wideTeams, wideSwitches int) []step {
	largest := sizes[len(sizes)-1]
	if slices.Contains(sizes, compareN) {
		largest = compareN
	}
	mixed := func(n int) shape {
		return shape{Name: fmt.Sprintf("mixed N=%d", n/4*4), Teams: n / 4, Policy: true, Switches: 1, Integrations: 1}
	}
	var plan []step
	for _, n := range sizes {
		plan = append(plan, step{shape: mixed(n), storm: n == largest && stormRPS > 0, trials: n == largest && peer})
	}
	if naive {
		plan = append(plan, step{shape: mixed(largest), naive: true})
	}
	if foreign > 0 {
		plan = append(plan, step{shape: mixed(largest), foreign: foreign})
	}
	if wideTeams > 0 {
		wide := shape{Name: fmt.Sprintf("%d teams x %d switches", wideTeams, wideSwitches), Teams: wideTeams, Switches: wideSwitches}
		plan = append(plan, step{shape: wide})
		if naive {
			plan = append(plan, step{shape: wide, naive: true})
		}
	}
	return plan
}

// reconcileRate is the --max-reconcile-rate of the provider's args (its
// default 100 if they do not say).
func reconcileRate(args []string) (int, error) {
	rate := 100
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--max-reconcile-rate="); ok {
			r, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("--max-reconcile-rate=%s: %w", v, err)
			}
			rate = r
		}
	}
	return rate, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func run() error {
	ns := flag.String("n", "100,300,1000,5000", "The N of the mixed shape (teams of a Team, an EscalationPolicy, a DeadmanSwitch and an Integration); -compare-n is also run --naive, with a 429 storm and with foreign Secrets.")
	compareN := flag.Int("compare-n", 1000, "The N run --naive, with the storm and with -foreign Secrets beside it (the largest N if it is not among -n).")
	foreign := flag.Int("foreign", 2000, "Unrelated 40 KB Secrets in another namespace, for a second run of -compare-n (0 skips it).")
	noisyA := flag.Int("noisy-a", 2000, "MRs of namespace A in the noisy-neighbour run (0 skips it); 20 more of A are annotated to poll every 100ms, and namespace B has 20.")
	noisyUnfair := flag.Bool("noisy-unfair", true, "Also run the noisy neighbour --first-come-first-served, for the side-by-side.")
	wideTeams := flag.Int("wide-teams", 10, "Teams of the second shape, each with -wide-switches switches (0 skips it).")
	wideSwitches := flag.Int("wide-switches", 50, "Switches per team of the second shape.")
	poll := flag.Duration("poll", 30*time.Second, "The provider's --poll.")
	latency := flag.Duration("latency", 20*time.Millisecond, "Added to every answer of the double.")
	stormRPS := flag.Int("storm-rps", 15, "The limit the double states in the 429 storm (0 skips it).")
	naive := flag.Bool("naive", true, "Also run the largest N and the wide shape --naive, for the side-by-side ratio.")
	providerArgs := flag.String("provider-args", "", "More provider flags, space separated (e.g. --max-reconcile-rate=50).")
	providerEnv := flag.String("provider-env", "", "Environment of the provider only, space separated (e.g. GOMEMLIMIT=64MiB GOGC=50).")
	peer := flag.Bool("peer", true, "Also run the -compare-n mixed shape on crossplane-contrib's provider-http "+stack.ProviderHTTPVersion+" (its defaults, then tuned to -poll and the provider's rate), with the behaviour trials on both.")
	discoverN := flag.Int("discover", 1000, "Objects of a server made by hand that cmd/discover's reading is timed on (teams of a team, a policy, a switch and an integration; 0 skips it).")
	out := flag.String("out", "_output/bench", "Where the JSON and the SVG plot go.")
	flag.Parse()

	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	base := append([]string{"--poll=" + poll.String()}, strings.Fields(*providerArgs)...)
	env := strings.Fields(*providerEnv)
	s, err := stack.Up(ctx, stack.Options{
		Root: root, Name: "bench", PortOffset: 200, ProviderArgs: base, Admin: true,
		ProviderEnv: env,
		DoubleArgs:  []string{"-latency=" + latency.String()}, Out: os.Stderr,
		// NOTE: a benchmark build, for --naive and --first-come-first-served.
		ProviderTags: "bench",
	})
	if err != nil {
		return err
	}
	defer s.Down(context.Background())
	fast := rest.CopyConfig(s.Config)
	fast.QPS, fast.Burst = 300, 600
	kube, err := stack.NewClient(fast)
	if err != nil {
		return err
	}
	seen, readyAt, err := watching(ctx, s.Config)
	if err != nil {
		return err
	}
	b := &bench{stack: s, poll: *poll, kube: kube, seen: seen, readyAt: readyAt}
	if b.rate, err = reconcileRate(base); err != nil {
		return err
	}
	b.rateSet = slices.ContainsFunc(base, func(a string) bool { return strings.HasPrefix(a, "--max-reconcile-rate=") })

	sizes, err := parseSizes(*ns)
	if err != nil {
		return err
	}
	plan := planFor(sizes, *compareN, *stormRPS, *naive, *peer, *foreign, *wideTeams, *wideSwitches)
	var results []result
	for i, p := range plan {
		if p.foreign > 0 {
			if err := b.foreignSecrets(ctx, p.foreign); err != nil {
				return err
			}
		}
		r, err := b.run(ctx, fmt.Sprintf("bench-%d", i), p.shape, p.naive, p.storm, p.trials, *stormRPS, p.foreign)
		if err != nil {
			return err
		}
		if p.foreign > 0 {
			if err := b.withoutForeignSecrets(ctx); err != nil {
				return err
			}
		}
		printRow(os.Stderr, r)
		results = append(results, r)
	}
	noisies, err := b.noisies(ctx, *noisyA, *noisyUnfair)
	if err != nil {
		return err
	}
	found, err := b.discovers(ctx, *discoverN, *latency)
	if err != nil {
		return err
	}
	var peers []result
	if *peer {
		if peers, err = b.peers(ctx, plan); err != nil {
			return err
		}
	}
	// The environment first, as a shell line would show it.
	report := newReport(results, *poll, *latency, append(env, base...))
	report.Noisy = noisies
	report.Discovery = found
	report.addPeers(peers)
	report.addNoisyTargets()
	if err := os.MkdirAll(*out, 0o750); err != nil {
		return err
	}
	j, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "scale.json"), j, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "scale.svg"), []byte(plot(results, report.Peers)), 0o600); err != nil {
		return err
	}
	printReport(os.Stdout, report)
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(*out, "scale.json"), filepath.Join(*out, "scale.svg"))
	return report.missed()
}
