package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// build builds every component's image for every platform.
func build(ctx context.Context, s settings) error {
	bi, err := info(ctx, s.root, s.version)
	if err != nil {
		return err
	}
	bins, err := os.MkdirTemp("", "provider-terdut-images-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(bins) }()
	if err := os.MkdirAll(s.images, 0o750); err != nil {
		return err
	}
	for _, c := range components() {
		images := map[string]v1.Image{}
		var per []string
		for _, arch := range s.platforms {
			bin, err := binary(ctx, s.root, bins, c, arch, bi)
			if err != nil {
				return err
			}
			img, err := image(c, arch, bin, bi)
			if err != nil {
				return err
			}
			ref, err := name.NewTag(c.Name + ":" + s.version)
			if err != nil {
				return err
			}
			if err := tarball.WriteToFile(tarballPath(s, c.Name, arch), ref, img); err != nil {
				return err
			}
			d, err := img.Digest()
			if err != nil {
				return err
			}
			images[arch] = img
			per = append(per, "linux/"+arch+" "+d.String())
		}
		idx := index(images)
		dir := filepath.Join(s.images, c.Name)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if _, err := layout.Write(dir, idx); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s:%s index %s (%s)\n", c.Name, s.version, d, strings.Join(per, ", "))
	}
	return nil
}

func tarballPath(s settings, component, arch string) string {
	return filepath.Join(s.images, component+"-"+arch+".tar")
}

func packagePath(s settings, pkg, arch string) string {
	if arch == "" {
		return filepath.Join(s.packages, pkg+".xpkg")
	}
	return filepath.Join(s.packages, pkg+"-"+arch+".xpkg")
}

// pack builds the packages: provider and function per platform with their
// runtime image, and the Configuration, its dependencies templated to the
// registry and version.
func pack(ctx context.Context, s settings) error {
	if s.crank == "" {
		return errors.New("-crank is required (go run ./cluster/local/stackctl path crank)")
	}
	if err := os.MkdirAll(s.packages, 0o750); err != nil {
		return err
	}
	for _, p := range []struct{ dir, name string }{{"provider", "provider-terdut"}, {"function", "function-terdut"}} {
		for _, arch := range s.platforms {
			img := tarballPath(s, p.name, arch)
			if _, err := os.Stat(img); err != nil {
				return fmt.Errorf("no runtime image for %s on %s (%w): run `make images` first", p.name, arch, err)
			}
			if err := crank(ctx, s, "xpkg", "build", "--package-root=package/"+p.dir, "--embed-runtime-image-tarball="+img, "-o", packagePath(s, p.name, arch)); err != nil {
				return err
			}
		}
	}
	root, err := os.MkdirTemp("", "configuration-terdut-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(root) }()
	if err := copyTree(filepath.Join(s.root, "package/configuration"), root); err != nil {
		return err
	}
	meta, err := os.ReadFile(filepath.Join(root, "crossplane.yaml"))
	if err != nil {
		return err
	}
	templated := strings.NewReplacer(
		"xpkg.example.com/ryuvia/", strings.TrimSuffix(s.registry, "/")+"/",
		`">=v0.1.0"`, `">=`+s.version+`"`,
	).Replace(string(meta))
	if err := os.WriteFile(filepath.Join(root, "crossplane.yaml"), []byte(templated), 0o600); err != nil {
		return err
	}
	if err := crank(ctx, s, "xpkg", "build", "--package-root="+root, "-o", packagePath(s, "configuration-terdut", "")); err != nil {
		return err
	}
	fmt.Printf("packages in %s: provider-terdut and function-terdut for %s with their runtime, configuration-terdut depending on %s at >=%s\n", s.packages, strings.Join(s.platforms, ", "), s.registry, s.version)
	return nil
}

// publish pushes the packages, refusing a provider or function package that
// carries no runtime image: a cluster could not run it.
func publish(ctx context.Context, s settings) error {
	if s.crank == "" {
		return errors.New("-crank is required (go run ./cluster/local/stackctl path crank)")
	}
	for _, name := range []string{"provider-terdut", "function-terdut"} {
		files := make([]string, 0, len(s.platforms))
		for _, arch := range s.platforms {
			f := packagePath(s, name, arch)
			if err := hasRuntime(f); err != nil {
				return err
			}
			files = append(files, f)
		}
		if err := push(ctx, s, name, files...); err != nil {
			return err
		}
	}
	return push(ctx, s, "configuration-terdut", packagePath(s, "configuration-terdut", ""))
}

// hasRuntime checks that a package embeds a runtime image: a layer below the
// package's own, and an entrypoint.
func hasRuntime(path string) error {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return fmt.Errorf("cannot read package %s: %w", path, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(layers) < 2 || len(cf.Config.Entrypoint) == 0 {
		return fmt.Errorf("package %s carries no runtime image (%d layers, no entrypoint): build it with `make images packages`, not `crossplane xpkg build` alone", path, len(layers))
	}
	return nil
}

func push(ctx context.Context, s settings, pkg string, files ...string) error {
	ref := strings.TrimSuffix(s.registry, "/") + "/" + pkg + ":" + s.version
	if err := crank(ctx, s, "xpkg", "push", "-f", strings.Join(files, ","), ref); err != nil {
		return fmt.Errorf("cannot push %s (is the registry %s up and reachable?): %w", ref, s.registry, err)
	}
	fmt.Printf("pushed %s\n", ref)
	return nil
}

func crank(ctx context.Context, s settings, args ...string) error {
	cmd := exec.CommandContext(ctx, s.crank, args...)
	cmd.Dir = s.root
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("crossplane %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// copyTree copies a directory of files (the Configuration package's).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o750)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
}
