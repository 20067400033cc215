package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"git.ryuvia.com/niklas/provider-terdut/cluster/images/pack"
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

// buildPackages builds the packages: provider and function per platform with their
// runtime image, and the Configuration, its dependencies templated to the
// registry and version.
func buildPackages(ctx context.Context, s settings) error {
	bi, err := info(ctx, s.root, s.version)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.packages, 0o750); err != nil {
		return err
	}
	var made []string
	for _, p := range []struct{ dir, name string }{{"provider", "provider-terdut"}, {"function", "function-terdut"}} {
		for _, arch := range s.platforms {
			path := tarballPath(s, p.name, arch)
			runtime, err := tarball.ImageFromPath(path, nil)
			if err != nil {
				return fmt.Errorf("no runtime image for %s on %s (%w): run `make images` first", p.name, arch, err)
			}
			d, err := packageFile(filepath.Join(s.root, "package", p.dir), runtime, bi, packagePath(s, p.name, arch), p.name+":"+s.version)
			if err != nil {
				return err
			}
			made = append(made, fmt.Sprintf("%s linux/%s %s", p.name, arch, d))
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
	if err := os.WriteFile(filepath.Join(root, "crossplane.yaml"), []byte(templateDependencies(string(meta), s.registry, s.version)), 0o600); err != nil {
		return err
	}
	d, err := packageFile(root, nil, bi, packagePath(s, "configuration-terdut", ""), "configuration-terdut:"+s.version)
	if err != nil {
		return err
	}
	made = append(made, "configuration-terdut "+d)
	fmt.Printf("packages in %s: provider-terdut and function-terdut for %s with their runtime, configuration-terdut depending on %s at >=%s\n  %s\n",
		s.packages, strings.Join(s.platforms, ", "), s.registry, s.version, strings.Join(made, "\n  "))
	return nil
}

// templateDependencies points the Configuration's dependencies (written as
// xpkg.example.com/ryuvia/NAME at >=v0.1.0) at registry and version.
func templateDependencies(meta, registry, version string) string {
	return strings.NewReplacer(
		"xpkg.example.com/ryuvia/", strings.TrimSuffix(registry, "/")+"/",
		`">=v0.1.0"`, `">=`+version+`"`,
	).Replace(meta)
}

// packageFile builds the package in dir on base and writes it to path,
// returning its digest.
func packageFile(dir string, base v1.Image, bi buildInfo, path, tag string) (string, error) {
	img, err := pack.Package(dir, base, bi.Epoch)
	if err != nil {
		return "", fmt.Errorf("package %s: %w", dir, err)
	}
	if err := pack.WriteFile(path, tag, img); err != nil {
		return "", err
	}
	d, err := img.Digest()
	return d.String(), err
}

// publish pushes the packages, refusing a provider or function package that
// carries no runtime image: a cluster could not run it.
func publish(ctx context.Context, s settings) error {
	for _, name := range []string{"provider-terdut", "function-terdut"} {
		images := make([]v1.Image, 0, len(s.platforms))
		for _, arch := range s.platforms {
			f := packagePath(s, name, arch)
			img, err := hasRuntime(f)
			if err != nil {
				return err
			}
			images = append(images, img)
		}
		if err := push(ctx, s, name, images...); err != nil {
			return err
		}
	}
	img, err := pack.ReadFile(packagePath(s, "configuration-terdut", ""))
	if err != nil {
		return fmt.Errorf("cannot read package %s: %w", packagePath(s, "configuration-terdut", ""), err)
	}
	return push(ctx, s, "configuration-terdut", img)
}

// hasRuntime reads a package and checks that it embeds a runtime image: a
// layer below the package's own, and an entrypoint.
func hasRuntime(path string) (v1.Image, error) {
	img, err := pack.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read package %s: %w", path, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(layers) < 2 || len(cf.Config.Entrypoint) == 0 {
		return nil, fmt.Errorf("package %s carries no runtime image (%d layers, no entrypoint): build it with `make images packages`", path, len(layers))
	}
	return img, nil
}

func push(ctx context.Context, s settings, pkg string, images ...v1.Image) error {
	ref := strings.TrimSuffix(s.registry, "/") + "/" + pkg + ":" + s.version
	if err := pack.Push(ctx, ref, images...); err != nil {
		return fmt.Errorf("cannot push %s (is the registry %s up and reachable?): %w", ref, s.registry, err)
	}
	fmt.Printf("pushed %s\n", ref)
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
