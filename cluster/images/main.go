// Command images builds provider-terdut's runtime images and packages
// without Docker, and publishes them:
//
//	images build   -version V [-platforms linux/amd64,linux/arm64]
//	images package -version V -registry HOST/ORG
//	images publish -version V -registry HOST/ORG
//
// build cross-compiles cmd/provider and cmd/function (static, no build
// paths or IDs) and puts each on an empty base with CA certificates, a
// non-root user (65532) and OCI labels, for every platform, as an image
// index (an OCI layout in _output/images/NAME) and one image tarball per
// platform. Every file and the image are dated to the commit
// (SOURCE_DATE_EPOCH), so the same commit gives the same digests.
//
// package builds the provider and function packages with their runtime
// image embedded (one per platform), and the Configuration package with its
// dependencies on HOST/ORG/provider-terdut and HOST/ORG/function-terdut at
// version >= V, without the crossplane CLI (cluster/images/pack: the same
// commit gives the same digests).
//
// publish checks that each provider and function package carries its
// runtime image and pushes all three to HOST/ORG (a multi-platform index
// for the provider and the function).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := runMain(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func runMain() error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return run(ctx, os.Args[1:])
}

// settings are every command's flags.
type settings struct {
	version   string
	registry  string
	platforms []string
	images    string
	packages  string
	root      string
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: images build|package|publish [flags]")
	}
	fs := flag.NewFlagSet("images "+args[0], flag.ContinueOnError)
	var s settings
	var platforms string
	fs.StringVar(&s.version, "version", "", "The version the images and packages are tagged with (required).")
	fs.StringVar(&s.registry, "registry", "xpkg.example.com/ryuvia", "HOST/ORG the packages are published to and depend on each other at.")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "The platforms to build for.")
	fs.StringVar(&s.images, "images", "_output/images", "Where the images go.")
	fs.StringVar(&s.packages, "packages", "_output/xpkg", "Where the packages go.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if s.version == "" {
		return fmt.Errorf("-version is required")
	}
	for p := range strings.SplitSeq(platforms, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os != "linux" || arch == "" {
			return fmt.Errorf("-platforms: %q is not linux/ARCH", p)
		}
		s.platforms = append(s.platforms, arch)
	}
	var err error
	if s.root, err = filepath.Abs("."); err != nil {
		return err
	}
	switch args[0] {
	case "build":
		return build(ctx, s)
	case "package":
		return buildPackages(ctx, s)
	case "publish":
		return publish(ctx, s)
	default:
		return fmt.Errorf("unknown command %q: want build, package or publish", args[0])
	}
}

// info reads what a build depends on from git: the commit and its time.
func info(ctx context.Context, root, version string) (buildInfo, error) {
	i := buildInfo{Version: version, Source: "https://git.ryuvia.com/niklas/provider-terdut"}
	out, err := gitOut(ctx, root, "log", "-1", "--format=%H %ct")
	if err != nil {
		return i, err
	}
	rev, ts, _ := strings.Cut(strings.TrimSpace(out), " ")
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return i, fmt.Errorf("the commit's time %q: %w", ts, err)
	}
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		if secs, err = strconv.ParseInt(e, 10, 64); err != nil {
			return i, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", e, err)
		}
	}
	i.Revision, i.Epoch = rev, time.Unix(secs, 0).UTC()
	return i, nil
}

func gitOut(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
