// Command stackctl brings up provider-terdut on the local control plane for
// `make dev` (cluster/local/dev.sh): the control plane, the terdut-server
// test double, the provider's CRDs, the ClusterProviderConfig "default" and
// the provider, through the same Go package (cluster/local/stack) the
// end-to-end suite uses. Everything it starts keeps running after it exits
// and is stopped by PID with `make dev-down`.
//
//	stackctl up [-name dev] [-offset 0] [-- provider flags...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stackctl:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] != "up" {
		return fmt.Errorf("usage: stackctl up [-name dev] [-offset 0] [-users alice,bob] [-- provider flags]")
	}
	fs := flag.NewFlagSet("stackctl up", flag.ContinueOnError)
	name := fs.String("name", "dev", "The run directory's name under the cache folder.")
	offset := fs.Int("offset", 0, "Added to every port, to run two stacks side by side.")
	users := fs.String("users", "alice,bob", "The double's users.")
	double := fs.String("double-args", "", "Extra flags of the double, space separated (e.g. -latency=20ms).")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	s, err := stack.Up(ctx, stack.Options{
		Root: root, Name: *name, PortOffset: *offset, ProviderArgs: fs.Args(),
		Users: strings.Split(*users, ","), DoubleArgs: strings.Fields(*double), Nodes: true,
	})
	if err != nil {
		return err
	}
	fmt.Printf("double=%s\nkubeconfig=%s\n", s.Double.URL, s.Kubeconfig)
	return nil
}
