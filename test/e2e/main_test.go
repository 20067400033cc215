//go:build e2e

// Package e2e drives provider-terdut the way a user does: a real
// kube-apiserver and Crossplane core (cluster/local), the provider running out
// of cluster, and the terdut-server test double on loopback, all brought up
// by cluster/local/stack (the package `make dev` uses too). Run it with
// `make e2e`; it starts the stack once per run and stops what it started.
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// portOffset keeps the suite's control plane off `make dev`'s ports.
const portOffset = 100

// pollInterval is the provider's drift poll in the suite.
const pollInterval = "4s"

// env is the running stack, shared by every test of the run.
var env struct {
	stack                 *stack.Stack
	root, run, kubeconfig string
	kube                  client.Client
	doubleURL             string
	// doubles are every double's URL, for the leak check (under mu: the
	// leak watch reads them while tests add to them).
	mu          sync.Mutex
	doubles     []string
	leaks       leakWatch
	admin       *terdut.Client
	providerLog string
	// issued are secrets of doubles already gone (a second stack's), for
	// the leak check of the suite's output.
	issued []string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		if env.stack != nil {
			env.stack.Down(ctx)
		}
		return 1
	}
	defer env.stack.Down(ctx)
	env.leaks.start()
	defer env.leaks.stop()
	return m.Run()
}

func setup(ctx context.Context) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	t0 := time.Now()
	s, err := stack.Up(ctx, stack.Options{
		Root: filepath.Clean(filepath.Join(wd, "..", "..")), Name: "e2e", PortOffset: portOffset,
		ProviderArgs: []string{"--debug", "--poll=" + pollInterval}, Nodes: true,
	})
	env.stack = s
	if err != nil {
		return err
	}
	env.root, env.run, env.kubeconfig, env.kube = s.Root, s.Run, s.Kubeconfig, s.Kube
	env.doubleURL, env.providerLog = s.Double.URL, s.ProviderLog()
	addDouble(s.Double.URL)
	if env.admin, err = stack.NewAdminClient(s.Double); err != nil {
		return err
	}
	// A deleted team's service accounts stay on the double: the provider
	// must delete what it made (a real server may not cascade).
	if err := s.Double.Admin(ctx, http.MethodPut, "/admin/quirks", terdutdouble.Quirks{NoCascade: true}, nil); err != nil {
		return err
	}
	fmt.Printf("e2e: stack up in %s (double %s)\n", time.Since(t0).Round(time.Second), env.doubleURL)
	return nil
}

// addDouble adds a double's URL to those the leak check covers.
func addDouble(url string) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.doubles = append(env.doubles, url)
}

// doubles are the URLs of every double the suite started.
func doubles() []string {
	env.mu.Lock()
	defer env.mu.Unlock()
	return slices.Clone(env.doubles)
}

// killProvider kills the provider with SIGKILL, as a crash would.
func killProvider() { env.stack.KillProvider() }

// startProvider starts the provider again with the suite's flags.
func startProvider() error { return env.stack.StartProvider(context.Background()) }

// kubectl runs kubectl against the suite's cluster with stdin.
func kubectl(stdin []byte, args ...string) error {
	_, err := env.stack.Kubectl(context.Background(), stdin, args...)
	return err
}

func kubectlOut(stdin []byte, args ...string) (string, error) {
	return env.stack.Kubectl(context.Background(), stdin, args...)
}

// admin calls the suite's double's admin API.
func admin(method, path string, in, out any) error {
	return adminAt(env.doubleURL, method, path, in, out)
}

// adminAt calls the admin API of the double at base.
func adminAt(base, method, path string, in, out any) error {
	return (&stack.Double{URL: base}).Admin(context.Background(), method, path, in, out)
}

func state(t *testing.T) terdutdouble.State {
	t.Helper()
	return stateAt(t, env.doubleURL)
}

// stateAt is what the double at url holds.
func stateAt(t *testing.T, url string) terdutdouble.State {
	t.Helper()
	s, err := (&stack.Double{URL: url}).State(t.Context())
	if err != nil {
		t.Fatalf("double state: %v", err)
	}
	return s
}

func counters(t *testing.T) map[string]int {
	t.Helper()
	c, err := env.stack.Double.Counters(t.Context())
	if err != nil {
		t.Fatalf("double counters: %v", err)
	}
	return c
}

// pathCounters are the requests the double at url received, by "METHOD
// /path" as sent.
func pathCounters(t *testing.T, url string) map[string]int {
	t.Helper()
	var c map[string]int
	must(t, adminAt(url, http.MethodGet, "/admin/paths", nil, &c), "read the double's path counters")
	return c
}

// polled waits until the provider read path (GET, as sent, e.g.
// /api/teams/7/deadman/switches) of the suite's double n more times from
// now: the reconciles a "nothing happened" check means have run, instead of
// a sleep that hopes so.
func polled(t *testing.T, path string, n int) {
	t.Helper()
	polledAt(t, env.doubleURL, n, path)
}

// polledAt waits until the double at url answered n more GETs of every one
// of paths from now.
func polledAt(t *testing.T, url string, n int, paths ...string) {
	t.Helper()
	from := pathCounters(t, url)
	eventually(t, 90*time.Second, fmt.Sprintf("%d more reads of %v", n, paths), func() string {
		now := pathCounters(t, url)
		for _, p := range paths {
			if got := now[http.MethodGet+" "+p] - from[http.MethodGet+" "+p]; got < n {
				return fmt.Sprintf("%d reads of %s so far", got, p)
			}
		}
		return ""
	})
}

func fault(t *testing.T, f terdutdouble.Fault) {
	t.Helper()
	if err := env.stack.Double.AddFault(t.Context(), f); err != nil {
		t.Fatalf("add fault: %v", err)
	}
}

func clearFaults(t *testing.T) {
	t.Helper()
	if err := admin(http.MethodDelete, "/admin/faults", nil, nil); err != nil {
		t.Fatalf("clear faults: %v", err)
	}
}
