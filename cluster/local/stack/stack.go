// Package stack brings up provider-terdut on the local control plane: it
// builds the provider and the terdut-server test double, starts the double
// on loopback, installs the provider's CRDs, applies a ClusterProviderConfig
// templated for that double and starts the provider. `make dev` (through
// cluster/local/stackctl), the end-to-end suite, the scale benchmark and the
// crash trials all use it, so they run the same stack.
//
// The control plane (etcd, kube-apiserver, kube-controller-manager,
// Crossplane core; build.go builds them from the Go module proxy,
// controlplane.go runs them) and nodes without containers (kube-scheduler
// and kwok, nodes.go) are this package's too: cluster/local/stackctl is its
// command line.
package stack

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.ryuvia.com/niklas/provider-terdut/apis"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// Options say which stack to bring up.
type Options struct {
	// Root is the repository's root.
	Root string
	// Name names the run directory under the cache (dev, e2e, bench, ...).
	Name string
	// PortOffset is added to every port of the control plane, so two
	// stacks can run side by side.
	PortOffset int
	// ProviderArgs are the provider's flags (--poll=30s, ...); the stack
	// adds its metrics and health addresses.
	ProviderArgs []string
	// ProviderEnv is added to the provider's environment only (e.g.
	// GOMEMLIMIT=64MiB), not to the control plane's.
	ProviderEnv []string
	// DoubleArgs are extra flags of the double (e.g. -latency=20ms).
	DoubleArgs []string
	// Users are the double's users (escalation targets).
	Users []string
	// Out receives the progress lines; nil is os.Stdout.
	Out *os.File
	// Bare brings up the control plane and the double only: no CRDs, no
	// provider config, no provider (a package manager installs those).
	Bare bool
	// Admin runs the provider with the admin's kubeconfig and its CRDs
	// applied from package/provider/crds (benchmarks). Otherwise it is
	// installed through the package manager and runs as its revision's
	// ServiceAccount (Install).
	Admin bool
	// ProviderTags are the Go build tags of the provider binary (Admin
	// only): the benchmark's "bench" adds its side-by-side switches.
	ProviderTags string
	// Nodes starts kube-scheduler and kwok with a fake node, so composed
	// Deployments get pods that turn Ready (StartNodes).
	Nodes bool
	// NodesLater has Up start building what runs pods
	// (kube-controller-manager, kube-scheduler, kwok) only once the provider
	// runs, and leaves starting them to the caller's StartNodes, so managed
	// resources turn Ready while those still compile (make dev).
	NodesLater bool
}

// Stack is a running stack. Everything it started is stopped by PID, by
// Down (or `stackctl down`, through the PID files).
type Stack struct {
	Options

	// Run is the run directory: kubeconfig, PID files, logs, binaries.
	Run string
	// Kubeconfig is the cluster's kubeconfig file.
	Kubeconfig string
	// Kube is a client of the cluster (core, apps and the provider's kinds).
	Kube client.Client
	// Config is the admin's REST config of the cluster.
	Config *rest.Config
	// Double is the double the ClusterProviderConfig "default" points at.
	Double *Double
	// Provider is the running provider; nil while it is stopped.
	Provider *Process
	// ProviderKubeconfig is the provider's kubeconfig when it runs as its
	// revision's ServiceAccount; empty: the admin's.
	ProviderKubeconfig string
	// Identity is what the provider runs as, once installed.
	Identity Identity

	builds      *Builds
	controllers bool
}

// CacheDir is the folder the control plane's binaries and run directories
// live in: $PROVIDER_TERDUT_CACHE, or ~/.cache/provider-terdut.
func CacheDir() string {
	if c := os.Getenv("PROVIDER_TERDUT_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "provider-terdut")
}

// Up builds (or reuses) the control plane and starts it from an empty
// cluster, then builds and starts the double and the provider.
func Up(ctx context.Context, o Options) (*Stack, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	s := &Stack{Options: o, Run: filepath.Join(CacheDir(), "run", o.Name)}
	s.Kubeconfig = filepath.Join(s.Run, "kubeconfig")
	Down(s.Run, s.Stepf) // a previous run's leftovers
	if err := os.RemoveAll(s.Run); err != nil {
		return nil, err
	}
	// NOTE: the API server, the longest compile, starts first, the rest of
	// what managed resources need beside it; what runs pods is built once
	// those are done (with NodesLater, once the provider runs).
	builds, err := StartBuild(ctx, s.Out, CoreBinaries()...)
	if err != nil {
		return nil, err
	}
	s.builds = builds
	if err := builds.Wait(ctx, CoreBinaries()...); err != nil {
		return nil, err
	}
	later := []string{binControllers}
	if o.Nodes {
		later = NodeBinaries()
	}
	if !o.NodesLater {
		if err := builds.Add(later...); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(s.Run, 0o750); err != nil {
		return nil, err
	}
	if err := s.StartControlPlane(ctx); err != nil {
		return nil, err
	}
	switch {
	case o.NodesLater:
	case o.Nodes:
		if err := s.StartNodes(ctx); err != nil {
			return nil, err
		}
	default:
		if err := s.built(ctx, binControllers); err != nil {
			return nil, err
		}
		if err := s.StartControllers(ctx); err != nil {
			return nil, err
		}
	}
	// NOTE: installed through the package manager, the provider that runs
	// is the binary in its package (Install extracts it).
	if o.Admin {
		if err := s.Build(ctx, "provider", "./cmd/provider", o.ProviderTags); err != nil {
			return nil, err
		}
	}
	if err := s.Build(ctx, "terdut-double", "./cmd/terdut-double", ""); err != nil {
		return nil, err
	}
	key := "tdk_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	d, err := s.StartDouble(ctx, "terdut-double", append([]string{"-admin-key", key}, o.DoubleArgs...)...)
	if err != nil {
		return nil, err
	}
	s.Double = d
	if o.Bare {
		return s, nil
	}
	install := s.Install
	if o.Admin {
		install = s.InstallCRDs
	}
	if err := install(ctx); err != nil {
		return nil, err
	}
	if err := s.ApplyProviderConfig(ctx, d); err != nil {
		return nil, err
	}
	if err := s.StartProvider(ctx); err != nil {
		return nil, err
	}
	if o.NodesLater {
		// NOTE: only now: the provider's own compile above had the
		// machine to itself.
		if err := builds.Add(NodeBinaries()...); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Stepf prints a progress line with the time of day.
func (s *Stack) Stepf(format string, args ...any) { Stepf(s.Out, format, args...) }

// Stepf prints a progress line to w with the time of day.
func Stepf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, "==> [%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Attach returns the stack Up started earlier with the same options (a
// `make dev` still running), without starting anything.
func Attach(o Options) (*Stack, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	s := &Stack{Options: o, Run: filepath.Join(CacheDir(), "run", o.Name)}
	s.Kubeconfig = filepath.Join(s.Run, "kubeconfig")
	if err := s.connect(); err != nil {
		return nil, err
	}
	d, err := s.attachDouble("terdut-double")
	if err != nil {
		return nil, err
	}
	s.Double = d
	if kc := filepath.Join(s.Run, "provider.kubeconfig"); !o.Admin {
		if _, err := os.Stat(kc); err == nil {
			s.ProviderKubeconfig = kc
		}
	}
	return s, nil
}

func (s *Stack) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return err
	}
	s.Config = cfg
	s.Kube, err = NewClient(cfg)
	return err
}

// NewClient is a client of the cluster that knows core, apps and the
// provider's kinds. Unless cfg says otherwise it may send 50 requests a
// second (client-go's default of 5 made the benchmark's creation of 500
// switches, not the provider, the time to Ready).
func NewClient(cfg *rest.Config) (client.Client, error) {
	if cfg.QPS == 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = 50, 100
	}
	sch := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, admissionv1.AddToScheme, apis.AddToScheme} {
		if err := add(sch); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: sch})
}

// Build builds a package of the repository, with the Go build tags given (a
// comma-separated list, or none), into the run directory's bin.
func (s *Stack) Build(ctx context.Context, name, pkg, tags string) error {
	s.Stepf("%s: building %s", name, pkg)
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", tags, "-o", s.Bin(name), pkg)
	cmd.Dir = s.Root
	cmd.Stdout, cmd.Stderr = s.Out, os.Stderr
	return cmd.Run()
}

// built waits until the stack's background builds have built names (or
// checks that they are cached, on a stack Up did not start).
func (s *Stack) built(ctx context.Context, names ...string) error {
	if s.builds != nil {
		return s.builds.Wait(ctx, names...)
	}
	for _, n := range names {
		if _, err := os.Stat(mustBinary(n)); err != nil {
			return fmt.Errorf("%s is not built: run `go run ./cluster/local/stackctl build` first", n)
		}
	}
	return nil
}

// Bin is the path of a binary Build made.
func (s *Stack) Bin(name string) string { return filepath.Join(s.Run, "bin", name) }

// InstallCRDs applies package/provider/crds and waits until they are
// established.
func (s *Stack) InstallCRDs(ctx context.Context) error {
	s.Stepf("CRDs: installing package/provider/crds")
	crds := filepath.Join(s.Root, "package/provider/crds")
	if _, err := s.Kubectl(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, nil, "wait", "--for", "condition=established", "--timeout=60s", "-f", crds)
	return err
}

// ApplyProviderConfig applies examples/providerconfig/clusterproviderconfig.yaml
// (the ClusterProviderConfig "default" and its key Secret) pointed at d, as
// docs/install.md tells a user to: server-side, because a client-side apply
// copies the whole manifest, the key in plain text, into the Secret's
// kubectl.kubernetes.io/last-applied-configuration annotation.
func (s *Stack) ApplyProviderConfig(ctx context.Context, d *Double) error {
	s.Stepf("ClusterProviderConfig default -> %s (the double)", d.URL)
	b, err := os.ReadFile(filepath.Join(s.Root, "examples/providerconfig/clusterproviderconfig.yaml"))
	if err != nil {
		return err
	}
	y := strings.NewReplacer("http://terdut.platform-oncall.svc:8080", d.URL, "REPLACE-WITH-AN-INSTANCE-SCOPED-KEY", d.AdminKey.Reveal()).Replace(string(b))
	_, err = s.Kubectl(ctx, []byte(y), "apply", "--server-side", "--force-conflicts", "-f", "-")
	return err
}

// Kubectl runs kubectl against the stack's cluster.
func (s *Stack) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ProviderMetricsAddr is where the provider serves its metrics.
func (s *Stack) ProviderMetricsAddr() string { return "127.0.0.1:" + strconv.Itoa(18090+s.PortOffset) }

// StartProvider starts the provider with the stack's flags (plus extra).
func (s *Stack) StartProvider(_ context.Context, extra ...string) error {
	args := append([]string{
		"--metrics-bind-address=" + s.ProviderMetricsAddr(),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(18091+s.PortOffset),
	}, s.ProviderArgs...)
	p, err := s.start(s.providerEnv(), "provider", s.Bin("provider"), append(args, extra...)...)
	if err != nil {
		return err
	}
	s.Provider = p
	return nil
}

// StartReplica starts another provider process, named name (its log and
// PID file), serving metrics and health on its own ports (replica n > 0).
func (s *Stack) StartReplica(_ context.Context, name string, n int, extra ...string) (*Process, error) {
	args := append([]string{
		"--metrics-bind-address=" + s.ReplicaMetricsAddr(n),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(18091+2*n+s.PortOffset),
	}, s.ProviderArgs...)
	return s.start(s.providerEnv(), name, s.Bin("provider"), append(args, extra...)...)
}

// providerEnv is the provider's environment: ProviderEnv, and its own
// kubeconfig if it runs as its revision's ServiceAccount.
func (s *Stack) providerEnv() []string {
	if s.ProviderKubeconfig == "" {
		return s.ProviderEnv
	}
	return append(slices.Clone(s.ProviderEnv), "KUBECONFIG="+s.ProviderKubeconfig)
}

// ReplicaMetricsAddr is where replica n serves its metrics.
func (s *Stack) ReplicaMetricsAddr(n int) string {
	return "127.0.0.1:" + strconv.Itoa(18090+2*n+s.PortOffset)
}

// KillProvider kills the provider with SIGKILL, as a crash would.
func (s *Stack) KillProvider() {
	if s.Provider != nil {
		s.Provider.Kill()
		s.Provider = nil
	}
}

// StopProvider stops the provider with SIGTERM (SIGKILL after 10 s).
func (s *Stack) StopProvider() {
	if s.Provider != nil {
		s.Provider.Stop()
		s.Provider = nil
	}
}

// ProviderLog is the provider's log file (every run of it, appended).
func (s *Stack) ProviderLog() string { return filepath.Join(s.Run, "provider.log") }

// Down stops what the stack started and the control plane.
func (s *Stack) Down(_ context.Context) {
	s.StopProvider()
	Down(s.Run, s.Stepf)
}

// NewAdminClient is a terdut client of d with its admin key.
func NewAdminClient(d *Double) (*terdut.Client, error) {
	return terdut.New(terdut.Options{Endpoint: d.URL, Token: d.AdminKey, MaxRetries: -1})
}
