// Command stackctl builds, starts and stops provider-terdut's local control
// plane (cluster/local/stack, which the end-to-end suite and the benchmarks
// use too): etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok with a fake node, Crossplane core, the terdut-server test double
// and the provider. Everything it starts binds 127.0.0.1 (Crossplane core's
// ports excepted), keeps running after it exits and is stopped by PID.
//
//	stackctl build [NAME...]         every binary (or those named), built once and cached
//	stackctl up [-name dev] [-offset 0] [-- provider flags...]
//	stackctl dev [-offset 0]         make dev: up, the examples, the claims; stays up
//	stackctl down [-name dev]        stop what up or dev started
//	stackctl status [-name dev]      say what runs
//	stackctl path NAME               print a cached binary (crank, crossplane, ...)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

const usage = "usage: stackctl build | up [-name dev] [-offset 0] [-- provider flags] | dev [-offset 0] | down [-name dev] | status [-name dev] | path NAME"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stackctl:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	fs := flag.NewFlagSet("stackctl "+args[0], flag.ContinueOnError)
	name := fs.String("name", "dev", "The run directory's name under the cache folder.")
	offset := fs.Int("offset", 0, "Added to every port, to run two stacks side by side.")
	users := fs.String("users", "alice,bob", "The double's users.")
	double := fs.String("double-args", "", "Extra flags of the double, space separated (e.g. -latency=20ms).")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	run := filepath.Join(stack.CacheDir(), "run", *name)
	switch args[0] {
	case "build":
		return stack.Build(ctx, os.Stdout, fs.Args()...)
	case "path":
		if fs.NArg() != 1 {
			return errors.New(usage)
		}
		p, err := stack.Binary(fs.Arg(0))
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "down":
		stack.Down(run, func(format string, args ...any) { stack.Stepf(os.Stdout, format, args...) })
		return nil
	case "status":
		fmt.Println(strings.Join(stack.Status(run), "\n"))
		return nil
	case "up", "dev":
		root, err := filepath.Abs(".")
		if err != nil {
			return err
		}
		o := stack.Options{
			Root: root, Name: *name, PortOffset: *offset, ProviderArgs: fs.Args(),
			Users: strings.Split(*users, ","), DoubleArgs: strings.Fields(*double), Nodes: true,
		}
		if args[0] == "up" {
			s, err := stack.Up(ctx, o)
			if err != nil {
				return err
			}
			fmt.Printf("double=%s\nkubeconfig=%s\n", s.Double.URL, s.Kubeconfig)
			return nil
		}
		o.Name, o.NodesLater = "dev", true
		if len(o.ProviderArgs) == 0 {
			o.ProviderArgs = []string{"--poll=30s"}
		}
		return dev(ctx, o)
	default:
		return errors.New(usage)
	}
}
