// Package pack builds OCI image layers and Crossplane packages (xpkg)
// without Docker or the crossplane CLI, and pushes them to a registry.
//
// A Crossplane package is an OCI image with one layer that holds a single
// file, package.yaml: the package's crossplane.yaml (its meta object:
// Provider, Function or Configuration) followed by its objects (CRDs for a
// provider or function; XRDs and Compositions for a configuration) as one
// YAML stream. The manifest marks that layer with the annotation
// io.crossplane.xpkg: base, and the image's config carries the label
// io.crossplane.xpkg:<layer digest> = base, which is how package managers
// find it. A provider or function package is its runtime image with the
// package layer on top, so the package manager can run it.
//
// Every tar header and the image's creation time are fixed to one epoch,
// and files are written in path order, so the same inputs give the same
// digests.
package pack

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// StreamFile is the package layer's one file.
	StreamFile = "package.yaml"
	// AnnotationKey marks the package layer in the manifest (and, with the
	// layer's digest, in the config's labels).
	AnnotationKey = "io.crossplane.xpkg"
	// PackageAnnotation is AnnotationKey's value on the package layer.
	PackageAnnotation = "base"
)

// File is one file of a layer.
type File struct {
	Path string
	Mode int64
	Data []byte
}

// Layer is a gzipped tar of files (and the folders above them) with every
// header fixed (owner root, mtime the epoch), so the same files give the same
// digest.
func Layer(files []File, epoch time.Time) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	dirs := map[string]bool{}
	for _, f := range files {
		for d := filepath.Dir("/" + strings.TrimPrefix(f.Path, "/")); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	all := make([]string, 0, len(dirs))
	for d := range dirs {
		all = append(all, d)
	}
	slices.Sort(all)
	for _, d := range all {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Size: int64(len(f.Data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(types.OCILayer))
}

// EmptyImage is an image with no layers, in OCI media types.
func EmptyImage() v1.Image {
	return mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
}

// metaKinds are the package kinds, and the kinds of objects each may carry.
func metaKinds() map[string][]string {
	return map[string][]string{
		"Provider":      {"CustomResourceDefinition"},
		"Function":      {"CustomResourceDefinition"},
		"Configuration": {"CompositeResourceDefinition", "Composition"},
	}
}

// Stream reads a package's folder: root/crossplane.yaml first, then every
// other .yaml file below root in path order, each document checked to be an
// object the package's kind may carry. It returns package.yaml's bytes.
func Stream(root string) ([]byte, error) {
	meta, err := os.ReadFile(filepath.Join(root, "crossplane.yaml"))
	if err != nil {
		return nil, fmt.Errorf("a package needs a crossplane.yaml: %w", err)
	}
	docs, err := documents(meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, "crossplane.yaml"), err)
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: want exactly one meta object (Provider, Function or Configuration), got %d documents", filepath.Join(root, "crossplane.yaml"), len(docs))
	}
	kind, err := kindOf(docs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, "crossplane.yaml"), err)
	}
	allowed, ok := metaKinds()[kind]
	if !ok {
		return nil, fmt.Errorf("%s: kind %q is not a package (Provider, Function or Configuration)", filepath.Join(root, "crossplane.yaml"), kind)
	}
	var paths []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".yaml") || p == filepath.Join(root, "crossplane.yaml") {
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out bytes.Buffer
	out.WriteString("---\n")
	out.Write(docs[0])
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := documents(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, o := range objs {
			k, err := kindOf(o)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if !slices.Contains(allowed, k) {
				return nil, fmt.Errorf("%s: a %s package may not carry a %s (only %s)", p, kind, k, strings.Join(allowed, ", "))
			}
			out.WriteString("---\n")
			out.Write(o)
		}
	}
	return out.Bytes(), nil
}

// documents splits a YAML stream into its non-empty documents, each ending in
// a newline.
func documents(b []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if len(bytes.TrimSpace(stripComments(d))) == 0 {
			continue
		}
		d = bytes.TrimPrefix(bytes.TrimLeft(d, "\n"), []byte("---\n"))
		if !bytes.HasSuffix(d, []byte("\n")) {
			d = append(d, '\n')
		}
		docs = append(docs, d)
	}
}

// stripComments drops comment lines, to tell an empty document.
func stripComments(d []byte) []byte {
	var out bytes.Buffer
	for l := range bytes.SplitSeq(d, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("---")) {
			continue
		}
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// kindOf is a document's kind; it must have an apiVersion and a kind.
func kindOf(doc []byte) (string, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", err
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return "", errors.New("a document without apiVersion and kind")
	}
	return tm.Kind, nil
}

// Package builds the package in root on base: a runtime image (provider,
// function) or nil (a configuration: an empty image). The package layer is
// dated to epoch, as is the image when it has no base.
func Package(root string, base v1.Image, epoch time.Time) (v1.Image, error) {
	stream, err := Stream(root)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = EmptyImage()
	}
	l, err := Layer([]File{{Path: StreamFile, Mode: 0o644, Data: stream}}, epoch)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, Annotations: map[string]string{AnnotationKey: PackageAnnotation}, MediaType: types.OCILayer})
	if err != nil {
		return nil, err
	}
	d, err := l.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels[AnnotationKey+":"+d.String()] = PackageAnnotation
	if cf.Created.IsZero() || cf.Created.Unix() <= 0 {
		cf.Created = v1.Time{Time: epoch.UTC()}
	}
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// WriteFile writes an image as a tarball tagged tag (what `docker load` and
// the crossplane CLI read).
func WriteFile(path, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return tarball.WriteToFile(path, ref, img)
}

// ReadFile reads an image tarball WriteFile wrote.
func ReadFile(path string) (v1.Image, error) { return tarball.ImageFromPath(path, nil) }

// Push pushes images to ref (registry/repository:tag): one image as that
// tag; several (one per platform) each by digest, then an index of them,
// with each one's platform from its config, as that tag.
func Push(ctx context.Context, ref string, images ...v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	switch len(images) {
	case 0:
		return errors.New("nothing to push")
	case 1:
		return remote.Write(tag, images[0], opts...)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range images {
		d, err := img.Digest()
		if err != nil {
			return err
		}
		by, err := name.NewDigest(tag.Repository.Name()+"@"+d.String(), name.StrictValidation)
		if err != nil {
			return err
		}
		if err := remote.Write(by, img, opts...); err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		mt, err := img.MediaType()
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: mt, Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, OSVersion: cf.OSVersion},
		}})
	}
	return remote.WriteIndex(tag, idx, opts...)
}
