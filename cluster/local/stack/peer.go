package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ProviderHTTPModule and ProviderHTTPVersion are the peer the benchmark
// compares the provider with: crossplane-contrib's provider-http, what a
// Crossplane user has for a REST API without a dedicated provider.
const (
	ProviderHTTPModule  = "github.com/crossplane-contrib/provider-http"
	ProviderHTTPVersion = "v1.0.14"
)

// ProviderHTTP builds provider-http at ProviderHTTPVersion from its Go module,
// once (the binary is cached beside the control plane's), through a wrapper
// module that requires it: the proxy lists no versions of it, so `go install
// ...@version` cannot. It returns the binary and the folder of the module's
// CRDs (package/crds, read in the module cache, never copied).
func (s *Stack) ProviderHTTP(ctx context.Context) (bin, crds string, err error) {
	dir, err := moduleDir(ctx, ProviderHTTPModule, ProviderHTTPVersion)
	if err != nil {
		return "", "", err
	}
	crds = filepath.Join(dir, "package", "crds")
	bin = filepath.Join(CacheDir(), "bin", "provider-http-"+ProviderHTTPVersion)
	if _, err := os.Stat(bin); err == nil {
		s.Stepf("provider-http %s: cached (%s)", ProviderHTTPVersion, bin)
		return bin, crds, nil
	}
	start := time.Now()
	s.Stepf("provider-http %s: building from its Go module (~2 min cold)", ProviderHTTPVersion)
	src := filepath.Join(CacheDir(), "src", "provider-http-"+ProviderHTTPVersion)
	if err := os.MkdirAll(src, 0o750); err != nil {
		return "", "", err
	}
	// The module's own go line; a tool line makes its command part of the
	// wrapper's build list, so tidy resolves what the command needs at the
	// versions the module requires.
	mod := fmt.Sprintf("module local/provider-http\n\ngo 1.24.0\n\ntool %s/cmd/provider\n\nrequire %s %s\n",
		ProviderHTTPModule, ProviderHTTPModule, ProviderHTTPVersion)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(mod), 0o600); err != nil {
		return "", "", err
	}
	if err := goIn(ctx, src, "mod", "tidy"); err != nil {
		return "", "", err
	}
	if err := goIn(ctx, src, "build", "-o", bin+".tmp", ProviderHTTPModule+"/cmd/provider"); err != nil {
		return "", "", err
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", "", err
	}
	s.Stepf("provider-http %s: built in %.0f s", ProviderHTTPVersion, time.Since(start).Seconds())
	return bin, crds, nil
}

// moduleDir downloads module@version into the module cache and returns
// its folder there.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	m, err := download(ctx, module, version)
	return m.Dir, err
}

// A downloaded module: its folder and its go.mod in the module cache.
type downloaded struct {
	Dir   string `json:"Dir"`
	GoMod string `json:"GoMod"`
	Error string `json:"Error"`
}

// download runs `go mod download -json module@version`.
func download(ctx context.Context, module, version string) (downloaded, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var m downloaded
	if jerr := json.Unmarshal(out, &m); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil || m.Error != "" || m.Dir == "" || m.GoMod == "" {
		return m, errors.Join(fmt.Errorf("go mod download %s@%s: %s", module, version, strings.TrimSpace(m.Error)), err)
	}
	return m, nil
}

// goIn runs the go command in dir, its output to stderr.
func goIn(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return nil
}
