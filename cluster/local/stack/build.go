package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Versions of the control plane's parts, each built once from the Go module
// proxy into CacheDir()/bin (every binary's name carries its version, so a
// bump rebuilds it).
const (
	EtcdVersion         = "v3.6.5"
	KubeStagingVersion  = "v0.35.4"
	CrossplaneVersion   = "v2.4.0"
	CrankVersion        = "v2.2.0"
	RegistryVersion     = "v0.21.8"
	AlertmanagerVersion = "v0.35.0"
)

// The binaries' names, as Binary knows them.
const (
	binEtcd         = "etcd"
	binAPIServer    = "kube-apiserver"
	binControllers  = "kube-controller-manager"
	binScheduler    = "kube-scheduler"
	binCrossplane   = "crossplane"
	binCrank        = "crank"
	binRegistry     = "registry"
	binAlertmanager = "alertmanager"
	binKwok         = "kwok"
)

// Binary is the path of a cached binary by name (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, crossplane, crank, registry,
// alertmanager, kwok), whether or not it is built yet.
func Binary(name string) (string, error) {
	var version string
	switch name {
	case binEtcd:
		version = EtcdVersion
	case binAPIServer, binControllers, binScheduler:
		version = KubeVersion
	case binCrossplane:
		version = CrossplaneVersion
	case binCrank:
		version = CrankVersion
	case binRegistry:
		version = RegistryVersion
	case binAlertmanager:
		version = AlertmanagerVersion
	case binKwok:
		version = KwokVersion
	default:
		return "", fmt.Errorf("no binary %q (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, crossplane, crank, registry, alertmanager, kwok)", name)
	}
	return filepath.Join(CacheDir(), "bin", name+"-"+version), nil
}

func mustBinary(name string) string {
	b, err := Binary(name)
	if err != nil {
		panic(err)
	}
	return b
}

// A builder builds the binaries and says how long each took.
type builder struct {
	out io.Writer
	mu  sync.Mutex
}

func (b *builder) stepf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	Stepf(b.out, format, args...)
}

// Build builds every binary the stack runs that is not cached yet, in two
// lanes side by side (the Kubernetes binaries, and the rest), printing each
// step's time. Cold, on two cores, this is the longest part of `make dev`.
func Build(ctx context.Context, out io.Writer) error {
	t0 := time.Now()
	b := &builder{out: out}
	if err := os.MkdirAll(filepath.Join(CacheDir(), "bin"), 0o750); err != nil {
		return err
	}
	lanes := [][]func(context.Context) error{
		{b.kube},
		{b.etcd, b.crossplane, b.crank, b.registry, b.alertmanager, b.kwok},
	}
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, lane := range lanes {
		wg.Go(func() {
			for _, step := range lane {
				if errs[i] = step(ctx); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.stepf("all binaries ready in %s (%.0f s)", filepath.Join(CacheDir(), "bin"), time.Since(t0).Seconds())
	return nil
}

// step builds names with build unless they are all cached.
func (b *builder) step(what, cold string, build func() error, names ...string) error {
	missing := false
	for _, n := range names {
		if _, err := os.Stat(mustBinary(n)); err != nil {
			missing = true
		}
	}
	if !missing {
		b.stepf("%s: cached", what)
		return nil
	}
	t0 := time.Now()
	b.stepf("%s: building (%s cold)", what, cold)
	if err := build(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	b.stepf("%s: built in %.0f s", what, time.Since(t0).Seconds())
	return nil
}

// goBuild runs the go command in dir with the module proxy's modules and the
// machine's own toolchain.
func goBuild(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// buildTo builds pkg in dir into the binary name, through a temporary file.
func buildTo(ctx context.Context, dir, name, ldflags, pkg string) error {
	bin := mustBinary(name)
	if err := goBuild(ctx, dir, nil, "build", "-ldflags", ldflags, "-o", bin+".tmp", pkg); err != nil {
		return err
	}
	return os.Rename(bin+".tmp", bin)
}

// srcDir is a wrapper module's folder.
func srcDir(name string) (string, error) {
	d := filepath.Join(CacheDir(), "src", name)
	return d, os.MkdirAll(d, 0o750)
}

// goMod is where the module cache keeps module@version's go.mod.
func goMod(ctx context.Context, module, version string) (string, error) {
	m, err := download(ctx, module, version)
	return m.GoMod, err
}

func (b *builder) etcd(ctx context.Context) error {
	return b.step("etcd "+EtcdVersion, "~1 min", func() error {
		d, err := srcDir("etcd-" + EtcdVersion)
		if err != nil {
			return err
		}
		mod := "module local/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 " + EtcdVersion + "\n"
		main := "package main\n\nimport (\n\t\"os\"\n\n\t\"go.etcd.io/etcd/server/v3/etcdmain\"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n"
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte(mod), 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "main.go"), []byte(main), 0o600); err != nil {
			return err
		}
		if err := goBuild(ctx, d, nil, "mod", "tidy"); err != nil {
			return err
		}
		return buildTo(ctx, d, "etcd", "", ".")
	}, "etcd")
}

// stagingReplace matches k8s.io/kubernetes's replaces of its staging
// modules ("k8s.io/api => ./staging/src/k8s.io/api").
var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+)\s+=>\s+\./staging/\S+\s*$`)

// kubeWrapper is the wrapper module of k8s.io/kubernetes, given its go.mod.
func kubeWrapper(kubernetesMod []byte) string {
	var mod strings.Builder
	fmt.Fprintf(&mod, "module local/kubernetes\n\ngo 1.25\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubeVersion)
	for _, m := range stagingReplace.FindAllStringSubmatch(string(kubernetesMod), -1) {
		fmt.Fprintf(&mod, "\t%s => %s %s\n", m[1], m[1], KubeStagingVersion)
	}
	mod.WriteString(")\n")
	return mod.String()
}

// kube builds the API server, the controller manager and the scheduler
// from one wrapper module that requires k8s.io/kubernetes and points each
// of its staging modules at the published version.
func (b *builder) kube(ctx context.Context) error {
	return b.step("kube-apiserver, kube-controller-manager, kube-scheduler "+KubeVersion, "~6 min", func() error {
		d, err := srcDir("kubernetes-" + KubeVersion)
		if err != nil {
			return err
		}
		gm, err := goMod(ctx, "k8s.io/kubernetes", KubeVersion)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(gm)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte(kubeWrapper(src)), 0o600); err != nil {
			return err
		}
		ld := "-X k8s.io/component-base/version.gitVersion=" + KubeVersion +
			" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35"
		for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			if _, err := os.Stat(mustBinary(c)); err == nil {
				continue
			}
			t0 := time.Now()
			if err := buildTo(ctx, d, c, ld, "k8s.io/kubernetes/cmd/"+c); err != nil {
				return err
			}
			b.stepf("%s: built in %.0f s", c, time.Since(t0).Seconds())
		}
		return nil
	}, "kube-apiserver", "kube-controller-manager", "kube-scheduler")
}

// crossplaneModule writes a wrapper module with crossplane/v2's own
// requirements at version, minus its replace of ./apis.
func crossplaneModule(ctx context.Context, dir, version string) error {
	gm, err := goMod(ctx, "github.com/crossplane/crossplane/v2", version)
	if err != nil {
		return err
	}
	src, err := os.ReadFile(gm)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.mod"), []byte(crossplaneWrapper(src, version)), 0o600)
}

// crossplaneWrapper is the wrapper module of crossplane/v2 at version,
// given its go.mod.
func crossplaneWrapper(src []byte, version string) string {
	out := make([]string, 0, strings.Count(string(src), "\n")+1)
	for l := range strings.SplitSeq(string(src), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "module "):
			l = "module local/crossplane"
		case strings.HasPrefix(t, "replace github.com/crossplane/crossplane/apis/v2 => ./apis"):
			continue
		case strings.HasPrefix(t, "github.com/crossplane/crossplane/apis/v2 "):
			l = "\tgithub.com/crossplane/crossplane/apis/v2 " + version
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\nrequire github.com/crossplane/crossplane/v2 " + version + "\n"
}

func (b *builder) crossplane(ctx context.Context) error {
	return b.step("crossplane core "+CrossplaneVersion, "~6 min", func() error {
		return crossplaneCommand(ctx, CrossplaneVersion, binCrossplane)
	}, binCrossplane)
}

// crank is the crossplane CLI, not served from v2.3 on: built from
// crossplane v2.2.0's module.
func (b *builder) crank(ctx context.Context) error {
	return b.step("crossplane CLI (crank) "+CrankVersion, "~2.5 min", func() error {
		return crossplaneCommand(ctx, CrankVersion, binCrank)
	}, binCrank)
}

// crossplaneCommand builds crossplane/v2's cmd/NAME at version through its
// wrapper module, its version stamped (else Crossplane rejects every
// package as not compatible with its version).
func crossplaneCommand(ctx context.Context, version, name string) error {
	d, err := srcDir(name + "-" + version)
	if err != nil {
		return err
	}
	if err := crossplaneModule(ctx, d, version); err != nil {
		return err
	}
	return buildTo(ctx, d, name, "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version="+version,
		"github.com/crossplane/crossplane/v2/cmd/"+name)
}

func (b *builder) registry(ctx context.Context) error {
	return b.step("registry "+RegistryVersion, "seconds", func() error {
		tmp, err := os.MkdirTemp("", "registry")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp) //nolint:errcheck // A temporary folder.
		cmd := exec.CommandContext(ctx, "go", "install", "github.com/google/go-containerregistry/cmd/registry@"+RegistryVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install registry: %w\n%s", err, out)
		}
		return moveFile(filepath.Join(tmp, "registry"), mustBinary(binRegistry))
	}, "registry")
}

// alertmanager is a real Alertmanager for the end-to-end suite (it reads an
// Integration's Secret). NOTE: its module carries no built web UI
// (ui/app/dist is made by npm at release time), so it is built from a copy
// of the module source with a placeholder page there; the API is complete.
func (b *builder) alertmanager(ctx context.Context) error {
	return b.step("alertmanager "+AlertmanagerVersion, "~1 min", func() error {
		mod, err := moduleDir(ctx, "github.com/prometheus/alertmanager", AlertmanagerVersion)
		if err != nil {
			return err
		}
		d := filepath.Join(CacheDir(), "src", "alertmanager-"+AlertmanagerVersion)
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := copyTree(mod, d); err != nil {
			return err
		}
		for _, ui := range []string{"elm", "mantine"} {
			p := filepath.Join(d, "ui", "app", "dist", ui)
			if err := os.MkdirAll(p, 0o750); err != nil {
				return err
			}
			page := "<html><body>Alertmanager built from its Go module for provider-terdut tests: no web UI; the API works.</body></html>\n"
			if err := os.WriteFile(filepath.Join(p, "index.html"), []byte(page), 0o600); err != nil {
				return err
			}
		}
		return buildTo(ctx, d, "alertmanager", "-X github.com/prometheus/common/version.Version="+strings.TrimPrefix(AlertmanagerVersion, "v"), "./cmd/alertmanager")
	}, "alertmanager")
}

func (b *builder) kwok(ctx context.Context) error {
	return b.step("kwok "+KwokVersion, "~5 min", func() error {
		d, err := srcDir("kwok-" + KwokVersion)
		if err != nil {
			return err
		}
		mod := fmt.Sprintf("module local/kwok\n\ngo 1.26.0\n\ntool %s/cmd/kwok\n\nrequire %s %s\n", KwokModule, KwokModule, KwokVersion)
		if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte(mod), 0o600); err != nil {
			return err
		}
		if err := goBuild(ctx, d, nil, "mod", "tidy"); err != nil {
			return err
		}
		return buildTo(ctx, d, "kwok", "", KwokModule+"/cmd/kwok")
	}, "kwok")
}

// copyTree copies a folder (a module in the read-only module cache) to dst,
// writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o750)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o600)
	})
}

// moveFile moves a file, across file systems too.
func moveFile(from, to string) error {
	if err := os.Rename(from, to); err == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.WriteFile(to+".tmp", data, 0o755); err != nil { //nolint:gosec // An executable.
		return err
	}
	return os.Rename(to+".tmp", to)
}
