package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"git.ryuvia.com/niklas/provider-terdut/cluster/images/pack"
)

// nonRoot is the user and group every image runs as.
const nonRoot = 65532

// A component is one of the project's programs shipped as an image.
type component struct {
	// Name is the image's (and the package's) name.
	Name string
	// Pkg is the Go package of the binary.
	Pkg string
	// Binary is its path in the image.
	Binary string
	// LDFlags are the linker's -X flags, given the version.
	LDFlags func(version string) string
}

// components are the project's images.
func components() []component {
	return []component{
		{Name: "provider-terdut", Pkg: "./cmd/provider", Binary: "/usr/local/bin/provider", LDFlags: func(v string) string {
			return "-X git.ryuvia.com/niklas/provider-terdut/internal/version.Version=" + v
		}},
		{Name: "function-terdut", Pkg: "./cmd/function", Binary: "/usr/local/bin/function", LDFlags: func(string) string { return "" }},
	}
}

// buildInfo is what makes two builds the same: the same inputs.
type buildInfo struct {
	Version string
	// Source is the repository's address (OCI label).
	Source string
	// Revision is the commit.
	Revision string
	// Epoch is the time every file and the image say they were made
	// (SOURCE_DATE_EPOCH: the commit's time).
	Epoch time.Time
}

// binary cross-compiles a component for one architecture, static and with
// no build paths or IDs in it, so the same source gives the same bytes.
func binary(ctx context.Context, root, dir string, c component, arch string, info buildInfo) (string, error) {
	out := filepath.Join(dir, c.Name+"-"+arch)
	ld := strings.TrimSpace("-s -w -buildid= " + c.LDFlags(info.Version))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ld, "-o", out, c.Pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s for %s: %w", c.Pkg, arch, err)
	}
	return out, nil
}

// caBundle is the Mozilla roots golang.org/x/crypto/x509roots/fallback
// carries (pinned by go.sum), as a PEM file. Roots with constraints a PEM
// file cannot express (distrust after a date) are left out.
func caBundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// image is a component's runtime image for one architecture: the static
// binary, CA certificates and a passwd naming the non-root user, on an
// empty base.
func image(c component, arch, bin string, info buildInfo) (v1.Image, error) {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	l, err := pack.Layer([]pack.File{
		{Path: c.Binary, Mode: 0o755, Data: exe},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: caBundle()},
		{Path: "/etc/passwd", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)},
		{Path: "/etc/group", Mode: 0o644, Data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", nonRoot)},
	}, info.Epoch)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(pack.EmptyImage(), l)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: info.Epoch}
	cf.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cf.Config.Entrypoint = []string{c.Binary}
	cf.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    c.Name,
		"org.opencontainers.image.version":  info.Version,
		"org.opencontainers.image.source":   info.Source,
		"org.opencontainers.image.revision": info.Revision,
		"org.opencontainers.image.created":  info.Epoch.UTC().Format(time.RFC3339),
	}
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// index is the multi-platform image index of per-architecture images.
func index(images map[string]v1.Image) v1.ImageIndex {
	archs := make([]string, 0, len(images))
	for a := range images {
		archs = append(archs, a)
	}
	slices.Sort(archs)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, a := range archs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: images[a], Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	return idx
}
