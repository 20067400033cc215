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
	"slices"
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

// CoreBinaries bring up the control plane managed resources need: the API
// server (the longest compile, started first), etcd, Crossplane core and
// the registry the provider's package is installed from.
func CoreBinaries() []string { return []string{binAPIServer, binEtcd, binCrossplane, binRegistry} }

// NodeBinaries run pods (Deployments' controllers, the scheduler and kwok's
// fake node), which only composed Deployments need.
func NodeBinaries() []string { return []string{binControllers, binScheduler, binKwok} }

// SuiteBinaries only the tests run: the crossplane CLI (`crossplane render`,
// `crossplane beta trace`) and Alertmanager.
func SuiteBinaries() []string { return []string{binCrank, binAlertmanager} }

// AllBinaries is every binary Build knows, in the order it starts them.
func AllBinaries() []string {
	return slices.Concat(CoreBinaries(), NodeBinaries(), SuiteBinaries())
}

// A job builds some binaries; it starts once the jobs it comes after are
// done (they share its compiled packages).
type job struct {
	what   string
	cold   string
	names  []string
	after  []string
	build  func(context.Context) error
	state  int // 0 waiting, 1 running, 2 done
	err    error
	queued bool
}

// Builds are binaries being built in the background, at most two at a
// time (each go build uses every core; two side by side keep them busy
// through each other's links and downloads), in the order they were asked
// for.
type Builds struct {
	out  io.Writer
	mu   sync.Mutex
	cond *sync.Cond
	jobs []*job
}

// lanes is how many go builds run side by side.
const lanes = 2

// StartBuild starts building names (those not cached yet) in the
// background, in the order given, and returns at once; Wait waits for some.
func StartBuild(ctx context.Context, out io.Writer, names ...string) (*Builds, error) {
	if err := os.MkdirAll(filepath.Join(CacheDir(), "bin"), 0o750); err != nil {
		return nil, err
	}
	return startJobs(ctx, out, []*job{
		{what: "kube-apiserver " + KubeVersion, cold: "~10 min", names: []string{binAPIServer}, build: buildKube(binAPIServer)},
		{what: "etcd " + EtcdVersion, cold: "~2 min", names: []string{binEtcd}, build: buildEtcd},
		{what: "crossplane core " + CrossplaneVersion, cold: "~4 min", names: []string{binCrossplane}, build: buildCrossplane},
		{what: "registry " + RegistryVersion, cold: "seconds", names: []string{binRegistry}, build: buildRegistry},
		{
			what: "kube-controller-manager, kube-scheduler " + KubeVersion, cold: "~3 min after kube-apiserver",
			names: []string{binControllers, binScheduler}, after: []string{binAPIServer}, build: buildKube(binControllers, binScheduler),
		},
		{what: "kwok " + KwokVersion, cold: "~3 min", names: []string{binKwok}, build: buildKwok},
		{what: "crossplane CLI (crank) " + CrankVersion, cold: "~5 min", names: []string{binCrank}, build: buildCrank},
		{what: "alertmanager " + AlertmanagerVersion, cold: "~1 min", names: []string{binAlertmanager}, build: buildAlertmanager},
	}, cached, names...)
}

// startJobs starts lanes that run jobs (those isCached says are not done)
// as they are asked for.
func startJobs(ctx context.Context, out io.Writer, jobs []*job, isCached func([]string) bool, names ...string) (*Builds, error) {
	b := &Builds{out: out}
	b.cond = sync.NewCond(&b.mu)
	for _, j := range jobs {
		if isCached(j.names) {
			j.state = 2
		}
		b.jobs = append(b.jobs, j)
	}
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.cond.Broadcast()
	})
	for range lanes {
		go b.lane(ctx)
	}
	return b, b.Add(names...)
}

// cached says whether every one of names is built.
func cached(names []string) bool {
	for _, n := range names {
		if _, err := os.Stat(mustBinary(n)); err != nil {
			return false
		}
	}
	return true
}

// Add asks for more binaries, built after those asked for before.
func (b *Builds) Add(names ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range names {
		j := b.jobOf(n)
		if j == nil {
			_, err := Binary(n)
			return err
		}
		if j.queued {
			continue
		}
		j.queued = true
		if j.state == 2 {
			Stepf(b.out, "%s: cached", j.what)
			continue
		}
		// NOTE: the queue is the order of b.jobs among the queued ones: a
		// job asked for now goes after every job asked for before.
		b.jobs = append(slices.DeleteFunc(b.jobs, func(o *job) bool { return o == j }), j)
		Stepf(b.out, "%s: queued (%s cold)", j.what, j.cold)
	}
	b.cond.Broadcast()
	return nil
}

func (b *Builds) jobOf(name string) *job {
	for _, j := range b.jobs {
		if slices.Contains(j.names, name) {
			return j
		}
	}
	return nil
}

// lane runs queued jobs, first come first, each once the jobs it comes
// after are done.
func (b *Builds) lane(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		var next *job
		for _, j := range b.jobs {
			if j.queued && j.state == 0 && b.doneAll(j.after) {
				next = j
				break
			}
		}
		if next == nil {
			if ctx.Err() != nil {
				return
			}
			b.cond.Wait()
			continue
		}
		next.state = 1
		b.mu.Unlock()
		t0 := time.Now()
		Stepf(b.out, "%s: building", next.what)
		err := next.build(ctx)
		if err != nil {
			err = fmt.Errorf("%s: %w", next.what, err)
		} else {
			Stepf(b.out, "%s: built in %.0f s", next.what, time.Since(t0).Seconds())
		}
		b.mu.Lock()
		next.state, next.err = 2, err
		b.cond.Broadcast()
	}
}

// doneAll says whether the jobs building names are done (b.mu held).
func (b *Builds) doneAll(names []string) bool {
	for _, n := range names {
		if j := b.jobOf(n); j != nil && j.state != 2 {
			return false
		}
	}
	return true
}

// Wait waits until names are built (asking for them if nobody had).
func (b *Builds) Wait(ctx context.Context, names ...string) error {
	if err := b.Add(names...); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.cond.Broadcast()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		var errs []error
		done := true
		for _, n := range names {
			j := b.jobOf(n)
			if j.state != 2 {
				done = false
			} else if j.err != nil {
				errs = append(errs, j.err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
}

// Build builds names (every binary when none is named) that are not cached
// yet, and waits for them, printing each step's time.
func Build(ctx context.Context, out io.Writer, names ...string) error {
	if len(names) == 0 {
		names = AllBinaries()
	}
	t0 := time.Now()
	b, err := StartBuild(ctx, out, names...)
	if err != nil {
		return err
	}
	if err := b.Wait(ctx, names...); err != nil {
		return err
	}
	Stepf(out, "%d binaries ready in %s (%.0f s)", len(names), filepath.Join(CacheDir(), "bin"), time.Since(t0).Seconds())
	return nil
}

// goBuild runs the go command in dir with the module proxy's modules and the
// machine's own toolchain.
func goBuild(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// noDebug are the linker flags that leave out the symbol table and DWARF:
// the stack's binaries are run, never debugged, and a Kubernetes binary
// links markedly faster without them.
const noDebug = "-s -w"

// buildTo builds pkg in dir into the binary name, through a temporary file.
func buildTo(ctx context.Context, dir, name, ldflags, pkg string) error {
	bin := mustBinary(name)
	if err := goBuild(ctx, dir, "build", "-ldflags", strings.TrimSpace(noDebug+" "+ldflags), "-o", bin+".tmp", pkg); err != nil {
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

func buildEtcd(ctx context.Context) error {
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
	if err := goBuild(ctx, d, "mod", "tidy"); err != nil {
		return err
	}
	return buildTo(ctx, d, "etcd", "", ".")
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

// buildKube builds some of the API server, the controller manager and the
// scheduler, in one go build, from one wrapper module that requires
// k8s.io/kubernetes and points each of its staging modules at the published
// version.
func buildKube(names ...string) func(context.Context) error {
	return func(ctx context.Context) error {
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
		ld := noDebug + " -X k8s.io/component-base/version.gitVersion=" + KubeVersion +
			" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35"
		tmp, err := os.MkdirTemp(filepath.Join(CacheDir(), "bin"), "kube-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp) //nolint:errcheck // A temporary folder.
		pkgs := make([]string, 0, len(names))
		for _, n := range names {
			pkgs = append(pkgs, "k8s.io/kubernetes/cmd/"+n)
		}
		if err := goBuild(ctx, d, append([]string{"build", "-ldflags", ld, "-o", tmp + "/"}, pkgs...)...); err != nil {
			return err
		}
		for _, n := range names {
			if err := os.Rename(filepath.Join(tmp, n), mustBinary(n)); err != nil {
				return err
			}
		}
		return nil
	}
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

func buildCrossplane(ctx context.Context) error {
	return crossplaneCommand(ctx, CrossplaneVersion, binCrossplane)
}

// buildCrank builds the crossplane CLI, not served from v2.3 on: built from
// crossplane v2.2.0's module.
func buildCrank(ctx context.Context) error {
	return crossplaneCommand(ctx, CrankVersion, binCrank)
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

func buildRegistry(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "registry")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // A temporary folder.
	cmd := exec.CommandContext(ctx, "go", "install", "-ldflags="+noDebug, "github.com/google/go-containerregistry/cmd/registry@"+RegistryVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go install registry: %w\n%s", err, out)
	}
	return moveFile(filepath.Join(tmp, "registry"), mustBinary(binRegistry))
}

// buildAlertmanager builds a real Alertmanager for the end-to-end suite (it reads an
// Integration's Secret). NOTE: its module carries no built web UI
// (ui/app/dist is made by npm at release time), so it is built from a copy
// of the module source with a placeholder page there; the API is complete.
func buildAlertmanager(ctx context.Context) error {
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
}

func buildKwok(ctx context.Context) error {
	d, err := srcDir("kwok-" + KwokVersion)
	if err != nil {
		return err
	}
	mod := fmt.Sprintf("module local/kwok\n\ngo 1.26.0\n\ntool %s/cmd/kwok\n\nrequire %s %s\n", KwokModule, KwokModule, KwokVersion)
	if err := os.WriteFile(filepath.Join(d, "go.mod"), []byte(mod), 0o600); err != nil {
		return err
	}
	if err := goBuild(ctx, d, "mod", "tidy"); err != nil {
		return err
	}
	return buildTo(ctx, d, "kwok", "", KwokModule+"/cmd/kwok")
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
