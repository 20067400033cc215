package stack

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NOTE: with --package-runtime=External, Crossplane installs packages
// (revisions, CRDs, MRDs, XRDs, Compositions) but runs nothing: whoever runs
// the package's runtime marks its revision healthy. These are the steps a
// runtime controller would take, for the local control plane
// (docs/development.md).

// RegistryAddr is where StartRegistry serves: loopback, by port offset.
func (s *Stack) RegistryAddr() string { return "127.0.0.1:" + strconv.Itoa(15000+s.PortOffset) }

// FunctionAddr is where a composition function of the stack serves.
func (s *Stack) FunctionAddr() string { return "127.0.0.1:" + strconv.Itoa(19444+s.PortOffset) }

// StartRegistry runs go-containerregistry's in-memory registry (Build
// builds it) on RegistryAddr, for loopback only.
func (s *Stack) StartRegistry(ctx context.Context) (*Process, error) {
	p, err := s.Start(ctx, "registry", mustBinary(binRegistry), "-port", strconv.Itoa(15000+s.PortOffset))
	if err != nil {
		return nil, err
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", s.RegistryAddr()); err == nil {
			_ = c.Close()
			return p, nil
		}
	}
	p.Kill()
	return nil, errors.New("the registry did not listen on " + s.RegistryAddr())
}

// ExtractBinary pulls ref for this machine's platform from the registry and
// writes the file at path in it (the runtime image's binary) to dest: what
// runs is what ships.
func ExtractBinary(ctx context.Context, ref, path, dest string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return fmt.Errorf("cannot pull %s: %w", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	want := strings.TrimPrefix(path, "/")
	for _, v := range slices.Backward(layers) {
		found, err := extractFrom(v, want, dest)
		if err != nil || found {
			return err
		}
	}
	return fmt.Errorf("%s holds no %s", ref, path)
}

func extractFrom(l v1.Layer, want, dest string) (bool, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return false, err
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if h.Name != want || h.Typeflag != tar.TypeReg {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
			return false, err
		}
		f, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o750)
		if err != nil {
			return false, err
		}
		if _, err := io.Copy(f, io.LimitReader(tr, 512<<20)); err != nil {
			_ = f.Close()
			return false, err
		}
		return true, f.Close()
	}
}

// ServingCerts writes a server certificate for 127.0.0.1 signed by
// Crossplane's own CA (the Secret crossplane-root-ca), with that CA, to dir
// (ca.crt, tls.crt, tls.key): for the composition function (core dials
// functions only with mTLS), a package's runtime and core's webhook server.
func (s *Stack) ServingCerts(ctx context.Context, dir string) error {
	root := &corev1.Secret{}
	if err := s.Kube.Get(ctx, types.NamespacedName{Namespace: "crossplane-system", Name: "crossplane-root-ca"}, root); err != nil {
		return err
	}
	caBlock, _ := pem.Decode(root.Data["tls.crt"])
	keyBlock, _ := pem.Decode(root.Data["tls.key"])
	if caBlock == nil || keyBlock == nil {
		return errors.New("crossplane-root-ca holds no PEM certificate and key")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		return err
	}
	caKey, err := parseKey(keyBlock.Bytes)
	if err != nil {
		return err
	}
	srv, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "provider-terdut-local"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, caKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for f, data := range map[string][]byte{
		"ca.crt":  root.Data["tls.crt"],
		"tls.crt": srv.certPEM,
		"tls.key": srv.keyPEM,
	} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func parseKey(der []byte) (any, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return x509.ParsePKCS8PrivateKey(der)
}

// RevisionHealthy marks a package revision's runtime healthy, as a runtime
// controller would once it runs the package: a TLS Secret for it (the
// certificates in certDir), and for a function the endpoint it serves on.
func (s *Stack) RevisionHealthy(ctx context.Context, resource, revision, certDir, endpoint string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: revision + "-tls"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			return err
		}
		secret.Data[f] = b
	}
	if err := s.Kube.Create(ctx, secret); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	status := map[string]any{
		"tlsServerSecretName": secret.Name,
		"conditions": []map[string]any{{
			"type": "RuntimeHealthy", "status": "True", "reason": "HealthyPackageRevision",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}},
	}
	if endpoint != "" {
		status["endpoint"] = endpoint
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = s.Kubectl(ctx, nil, "patch", resource, revision, "--subresource=status", "--type=merge", "-p", string(patch))
	return err
}
