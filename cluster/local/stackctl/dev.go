package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// dev is `make dev`: the stack (control plane, nodes, the terdut-server
// TEST DOUBLE, Crossplane's RBAC manager, the provider's package installed
// through the package manager, the provider as its revision's
// ServiceAccount), then the examples, the composition function with the
// Configuration's XRDs and Compositions, a TerdutServer claim (on a second,
// fresh double) and a TerdutTeam claim, all Ready; then it stays up until
// Ctrl-C (which stops everything) or `make dev-down`.
func dev(ctx context.Context, o stack.Options) error {
	t0 := time.Now()
	took := func(since time.Time) string { return fmt.Sprintf("%.0f s", time.Since(since).Seconds()) }
	s, err := stack.Up(ctx, o)
	if err != nil {
		return err
	}
	s.Stepf("stack up in %s", took(t0))
	kc := func(stdin []byte, args ...string) error {
		_, err := s.Kubectl(ctx, stdin, args...)
		return err
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(o.Root, p))
		if err != nil {
			panic(err)
		}
		return b
	}

	t := time.Now()
	s.Stepf("managed resources: applying examples/terdut")
	if err := kc(read("examples/terdut/00-namespace.yaml"), "apply", "-f", "-"); err != nil {
		return err
	}
	if err := kc(nil, "apply", "-f", filepath.Join(o.Root, "examples/terdut")); err != nil {
		return err
	}
	if err := kc(nil, "-n", "team-a", "wait", "--for=condition=Ready", "--timeout=180s", "team,escalationpolicy,deadmanswitch,integration", "--all"); err != nil {
		return err
	}
	s.Stepf("examples Ready in %s: first managed resources Ready %s after start", took(t), took(t0))

	t = time.Now()
	if err := s.StartFunction(ctx); err != nil {
		return err
	}
	s.Stepf("composition function and Configuration ready in %s", took(t))

	// NOTE: the claim's pod turns Ready on kwok's fake node but runs
	// nothing: the provider reaches a second, fresh double (which the
	// claim's bootstrap ServiceAccount registers on) through the claim's
	// endpoint override.
	// NOTE: the claims' Deployment needs pods: what runs them (built
	// beside the steps above) starts now.
	t = time.Now()
	if err := s.StartNodes(ctx); err != nil {
		return err
	}
	s.Stepf("nodes ready in %s", took(t))

	t = time.Now()
	claims, err := s.StartDouble(ctx, "terdut-double-claims", "-fresh")
	if err != nil {
		return err
	}
	s.Stepf("claims: examples/claims as written (TerdutServer, replicas 1; endpoint -> %s)", claims.URL)
	if err := kc(read("examples/claims/00-namespaces.yaml"), "apply", "-f", "-"); err != nil {
		return err
	}
	srv := string(read("examples/claims/terdutserver.yaml"))
	withEndpoint := strings.Replace(srv, "  replicas: 1\n", "  replicas: 1\n  endpoint: "+claims.URL+"\n", 1)
	if withEndpoint == srv {
		return fmt.Errorf("examples/claims/terdutserver.yaml has no 'replicas: 1' line to add the endpoint after")
	}
	if err := kc([]byte(withEndpoint), "apply", "-f", "-"); err != nil {
		return err
	}
	s.Stepf("waiting for the TerdutServer claim to be Ready (a ready replica, then the provider bootstraps the fresh server)")
	if err := kc(nil, "-n", "platform-oncall", "wait", "--for=condition=Ready", "--timeout=240s", "terdutserver/terdut"); err != nil {
		return err
	}
	// NOTE: only after the bootstrap: a server with a user is no longer
	// fresh. The team's policy pages alice.
	if err := claims.Admin(ctx, http.MethodPost, "/admin/users", terdut.User{Username: "alice"}, nil); err != nil {
		return err
	}
	if err := kc(read("examples/claims/terdutteam.yaml"), "apply", "-f", "-"); err != nil {
		return err
	}
	s.Stepf("waiting for the TerdutTeam claim to be Ready")
	if err := kc(nil, "-n", "team-a", "wait", "--for=condition=Ready", "--timeout=240s", "terdutteam/web"); err != nil {
		return err
	}
	s.Stepf("claims Ready in %s", took(t))
	s.Stepf("up in %s", took(t0))

	for _, show := range [][]string{{"get", "terdutserver,terdutteam", "-A"}, {"get", "deploy", "-n", "platform-oncall"}, {"get", "managed", "-A"}} {
		out, err := s.Kubectl(ctx, nil, show...)
		if err != nil {
			return err
		}
		fmt.Printf("\n$ kubectl %s\n%s", strings.Join(show, " "), out)
	}
	fmt.Printf(`
The control plane, the terdut-server test double (%[1]s) and the provider run
on 127.0.0.1. In another shell:

  export KUBECONFIG=%[2]s
  kubectl get managed -A
  kubectl -n team-a describe integration prod-alertmanager
  kubectl -n team-a describe terdutteam web
  curl -s %[1]s/admin/state        # what the double holds
  curl -s %[3]s/admin/state      # what the claims' server (a second double) holds

The provider runs as its revision's ServiceAccount (kubeconfig %[4]s).
Logs: %[5]s/provider.log, terdut-double.log, function.log, rbac-manager.log, kwok.log
Press Ctrl-C to stop everything (or run 'make dev-down' elsewhere).
`, s.Double.URL, s.Kubeconfig, claims.URL, s.ProviderKubeconfig, s.Run)

	// Ctrl-C here stops everything; `make dev-down` elsewhere stops this
	// session (SIGTERM) and then everything else.
	pid := filepath.Join(s.Run, "dev-session.pid")
	if err := os.WriteFile(pid, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	got := <-sig
	_ = os.Remove(pid)
	if got == os.Interrupt {
		fmt.Println()
		stack.Down(s.Run, s.Stepf)
	}
	return nil
}
