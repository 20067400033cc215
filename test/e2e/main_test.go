//go:build e2e

// Package e2e drives provider-terdut the way a user does: a real
// kube-apiserver and Crossplane core (cluster/local), the provider running out
// of cluster, and the terdut-server test double on loopback. Run it with
// `make e2e`; it starts the stack once per run and stops what it started.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// portOffset keeps the suite's control plane off `make dev`'s ports.
const portOffset = "100"

// pollInterval is the provider's drift poll in the suite.
const pollInterval = "4s"

// env is the running stack, shared by every test of the run.
var env struct {
	root, run, kubeconfig string
	kube                  client.Client
	doubleURL             string
	doubles               []string // every double's URL, for the leak check
	admin                 *terdut.Client
	provider              *exec.Cmd
	providerLog           string
}

func TestMain(m *testing.M) {
	code, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		code = 1
	} else {
		code = m.Run()
	}
	teardown()
	os.Exit(code)
}

func sh(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), "TERDUT_RUN_DIR="+env.run, "TERDUT_PORT_OFFSET="+portOffset)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func setup() (int, error) {
	wd, _ := os.Getwd()
	env.root = filepath.Clean(filepath.Join(wd, "..", ".."))
	cache := os.Getenv("PROVIDER_TERDUT_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "provider-terdut")
	}
	env.run = filepath.Join(cache, "run", "e2e")
	_ = sh(filepath.Join(env.root, "cluster/local/local.sh"), "down") // a previous run's leftovers
	_ = os.RemoveAll(env.run)
	t0 := time.Now()
	if err := sh(filepath.Join(env.root, "cluster/local/local.sh"), "build"); err != nil {
		return 1, err
	}
	if err := sh(filepath.Join(env.root, "cluster/local/local.sh"), "up"); err != nil {
		return 1, err
	}
	env.kubeconfig = filepath.Join(env.run, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		return 1, err
	}
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = appsv1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	if env.kube, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return 1, err
	}

	bin := filepath.Join(env.run, "bin")
	for _, c := range [][]string{{"-o", filepath.Join(bin, "provider"), "./cmd/provider"}, {"-o", filepath.Join(bin, "terdut-double"), "./cmd/terdut-double"}} {
		if err := sh("go", append([]string{"build"}, c...)...); err != nil {
			return 1, err
		}
	}
	key := "tdk_e2e_" + fmt.Sprint(time.Now().UnixNano())
	double := exec.Command(filepath.Join(bin, "terdut-double"), "-listen", "127.0.0.1:0", "-admin-key", key, "-users", "alice,bob", "-addr-file", filepath.Join(env.run, "double.url"))
	if err := startLogged(double, "terdut-double"); err != nil {
		return 1, err
	}
	if err := waitFile(filepath.Join(env.run, "double.url"), 10*time.Second); err != nil {
		return 1, err
	}
	u, _ := os.ReadFile(filepath.Join(env.run, "double.url"))
	env.doubleURL = string(u)
	env.doubles = append(env.doubles, env.doubleURL)
	if env.admin, err = terdut.New(terdut.Options{Endpoint: env.doubleURL, Token: terdut.Secret(key)}); err != nil {
		return 1, err
	}

	if err := kubectl(nil, "apply", "--server-side", "-f", filepath.Join(env.root, "package/provider/crds")); err != nil {
		return 1, err
	}
	if err := kubectl(nil, "wait", "--for", "condition=established", "--timeout=60s", "-f", filepath.Join(env.root, "package/provider/crds")); err != nil {
		return 1, err
	}
	cpc, _ := os.ReadFile(filepath.Join(env.root, "examples/providerconfig/clusterproviderconfig.yaml"))
	cpc = []byte(strings.NewReplacer("http://terdut.platform-oncall.svc:8080", env.doubleURL, "REPLACE-WITH-AN-INSTANCE-SCOPED-KEY", key).Replace(string(cpc)))
	if err := kubectl(cpc, "apply", "-f", "-"); err != nil {
		return 1, err
	}
	if err := startProvider(); err != nil {
		return 1, err
	}
	fmt.Printf("e2e: stack up in %s (double %s)\n", time.Since(t0).Round(time.Second), env.doubleURL)
	return 0, nil
}

// startLogged starts cmd with its output in RUN/NAME.log and a PID file that
// `local.sh down` also honours.
func startLogged(cmd *exec.Cmd, name string) error {
	f, err := os.OpenFile(filepath.Join(env.run, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	if err := cmd.Start(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(env.run, name+".pid"), fmt.Append(nil, cmd.Process.Pid), 0o600)
}

func startProvider() error {
	env.providerLog = filepath.Join(env.run, "provider.log")
	env.provider = exec.Command(filepath.Join(env.run, "bin", "provider"), "--debug", "--poll="+pollInterval,
		"--metrics-bind-address=127.0.0.1:18190", "--health-probe-bind-address=127.0.0.1:18191")
	return startLogged(env.provider, "provider")
}

// killProvider kills the provider with SIGKILL, as a crash would.
func killProvider() {
	_ = env.provider.Process.Signal(syscall.SIGKILL)
	_ = env.provider.Wait()
}

func teardown() {
	if env.run == "" {
		return
	}
	_ = sh(filepath.Join(env.root, "cluster/local/local.sh"), "down")
}

func waitFile(path string, d time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return nil
		}
	}
	return fmt.Errorf("%s did not appear in %s", path, d)
}

// kubectl runs kubectl against the suite's cluster with stdin.
func kubectl(stdin []byte, args ...string) error {
	_, err := kubectlOut(stdin, args...)
	return err
}

func kubectlOut(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// admin calls the suite's double's admin API.
func admin(method, path string, in, out any) error {
	return adminAt(env.doubleURL, method, path, in, out)
}

// adminAt calls the admin API of the double at base.
func adminAt(base, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, base+path, body)
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer rsp.Body.Close()
	if rsp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, path, rsp.Status)
	}
	if out != nil {
		return json.NewDecoder(rsp.Body).Decode(out)
	}
	return nil
}

func state(t *testing.T) terdutdouble.State {
	t.Helper()
	return stateAt(t, env.doubleURL)
}

// stateAt is what the double at url holds.
func stateAt(t *testing.T, url string) terdutdouble.State {
	t.Helper()
	var s terdutdouble.State
	if err := adminAt(url, http.MethodGet, "/admin/state", nil, &s); err != nil {
		t.Fatalf("double state: %v", err)
	}
	return s
}

func counters(t *testing.T) map[string]int {
	t.Helper()
	c := map[string]int{}
	if err := admin(http.MethodGet, "/admin/counters", nil, &c); err != nil {
		t.Fatalf("double counters: %v", err)
	}
	return c
}

func fault(t *testing.T, f terdutdouble.Fault) {
	t.Helper()
	if err := admin(http.MethodPost, "/admin/faults", f, nil); err != nil {
		t.Fatalf("add fault: %v", err)
	}
}

func clearFaults(t *testing.T) {
	t.Helper()
	if err := admin(http.MethodDelete, "/admin/faults", nil, nil); err != nil {
		t.Fatalf("clear faults: %v", err)
	}
}
