package pack

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

const providerMeta = "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: p\n"

func crd(name string) string {
	return "# a comment\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\n"
}

// packageYAML is the package layer's package.yaml, found the way a package
// manager finds it: the layer the manifest annotates.
func packageYAML(t *testing.T, root string) string {
	t.Helper()
	img, err := Package(root, nil, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var found string
	for _, l := range m.Layers {
		if l.Annotations[AnnotationKey] != PackageAnnotation {
			continue
		}
		if cf.Config.Labels[AnnotationKey+":"+l.Digest.String()] != PackageAnnotation {
			t.Errorf("the config has no label %s:%s=%s", AnnotationKey, l.Digest, PackageAnnotation)
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name != StreamFile {
				t.Errorf("the package layer holds %s, want only %s", h.Name, StreamFile)
				continue
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			found = string(b)
		}
	}
	if found == "" {
		t.Fatalf("no layer annotated %s: %s holds a %s", AnnotationKey, PackageAnnotation, StreamFile)
	}
	return found
}

func TestAPackageCarriesItsMetaFirstThenItsObjectsInPathOrder(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"crossplane.yaml": providerMeta,
		"crds/b.yaml":     crd("b"),
		"crds/a.yaml":     crd("a"),
		"README.md":       "not yaml",
	})
	got := packageYAML(t, root)
	want := "---\n" + providerMeta + "---\n" + strings.TrimPrefix(crd("a"), "# a comment\n---\n") + "---\n" + strings.TrimPrefix(crd("b"), "# a comment\n---\n")
	if got != want {
		t.Errorf("package.yaml:\n%s\nwant:\n%s", got, want)
	}
}

func TestTheSameFolderGivesTheSameDigest(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"crossplane.yaml": providerMeta, "crds/a.yaml": crd("a")})
	epoch := time.Unix(1700000000, 0)
	digests := make([]string, 0, 2)
	for range 2 {
		img, err := Package(root, nil, epoch)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one folder: %s and %s", digests[0], digests[1])
	}
	write(t, root, map[string]string{"crds/a.yaml": crd("changed")})
	img, err := Package(root, nil, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() == digests[0] {
		t.Errorf("a changed CRD left the digest %s", d)
	}
}

func TestAPackageRefusesWhatItMayNotCarry(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no meta":                       {"crds/a.yaml": crd("a")},
		"two metas":                     {"crossplane.yaml": providerMeta + "---\n" + providerMeta},
		"not a package kind":            {"crossplane.yaml": crd("a")},
		"a provider with a Composition": {"crossplane.yaml": providerMeta, "x.yaml": "apiVersion: apiextensions.crossplane.io/v1\nkind: Composition\nmetadata:\n  name: c\n"},
		"a document without a kind":     {"crossplane.yaml": providerMeta, "x.yaml": "metadata:\n  name: c\n"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, files)
			if _, err := Package(root, nil, time.Unix(0, 0)); err == nil {
				t.Error("built a package, want a refusal")
			}
		})
	}
}

func TestTheRepositorysPackagesBuild(t *testing.T) {
	for _, dir := range []string{"provider", "function", "configuration"} {
		s, err := Stream(filepath.Join("..", "..", "..", "package", dir))
		if err != nil {
			t.Errorf("package/%s: %v", dir, err)
			continue
		}
		if !strings.HasPrefix(string(s), "---\napiVersion: meta.pkg.crossplane.io/") {
			t.Errorf("package/%s: package.yaml starts %.60q, want its meta object", dir, s)
		}
	}
}
