//go:build render

// Package render runs `crossplane render` (crank) over the Compositions in
// package/configuration against the composition function run locally, and
// compares what it renders with golden files: testdata/<case>/xr.yaml (and
// observed.yaml, the observed composed resources, and required.yaml, the
// resources the function asks for, if any) -> want.yaml.
// Cases named server-* use the XTerdutServer XRD and Composition, team-* the
// XTerdutTeam ones. `make render` runs it; -update rewrites the golden files.
package render

import (
	"bytes"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want.yaml from what renders")

func TestRender(t *testing.T) {
	crank := os.Getenv("CRANK")
	if crank == "" {
		t.Fatal("set CRANK to the crossplane CLI; `make render` sets it from go run ./cluster/local/stackctl path crank")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	addr := startFunction(t, root)

	cases, err := filepath.Glob("testdata/*/xr.yaml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no render cases in testdata (%v)", err)
	}
	for _, xr := range cases {
		dir := filepath.Dir(xr)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			plural := map[string]string{"server": "xterdutservers", "team": "xterdutteams"}[strings.SplitN(name, "-", 2)[0]]
			if plural == "" {
				t.Fatalf("case %s: name it server-* or team-*", name)
			}
			apis := filepath.Join(root, "package/configuration/apis")
			args := []string{
				"render", xr,
				filepath.Join(apis, "composition-"+plural+".yaml"), "functions.yaml",
				"--xrd=" + filepath.Join(apis, "definition-"+plural+".yaml"),
				"-a", "render.crossplane.io/runtime-development-target=" + addr,
			}
			if _, err := os.Stat(filepath.Join(dir, "observed.yaml")); err == nil {
				args = append(args, "--observed-resources="+filepath.Join(dir, "observed.yaml"))
			}
			if _, err := os.Stat(filepath.Join(dir, "required.yaml")); err == nil {
				args = append(args, "--required-resources="+filepath.Join(dir, "required.yaml"))
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), crank, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("crossplane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			golden := filepath.Join(dir, "want.yaml")
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
				t.Errorf("render of %s: -want (%s), +got:\n%s", xr, golden, diff)
			}
		})
	}
}

// startFunction builds cmd/function and serves it without TLS on a free
// loopback port for the test's lifetime; it returns the address.
func startFunction(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "function")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/function")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/function: %v\n%s", err, out)
	}
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	var log bytes.Buffer
	fn := exec.Command(bin, "--insecure", "--address", addr) //nolint:noctx // It outlives the test's context until Cleanup kills it by PID.
	fn.Stdout, fn.Stderr = &log, &log
	if err := fn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fn.Process.Kill() // by PID: the process this test started
		_ = fn.Wait()
		if t.Failed() {
			t.Logf("function log:\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", addr)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the function did not listen on %s: %v\n%s", addr, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
