package stack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The control plane's ports, before the stack's PortOffset; everything binds
// 127.0.0.1 (Crossplane core's own ports excepted: it has no flag for the
// host).
const (
	portEtcd         = 12379
	portEtcdPeer     = 12380
	portAPIServer    = 16443
	portControllers  = 10257
	portScheduler    = 10259
	portXPMetrics    = 18080
	portXPHealth     = 18081
	portXPWebhook    = 19443
	portFunction     = 19444
	crossplaneSystem = "crossplane-system"
)

// controlPlane are the control plane's processes, stopped last, in this
// order, by Down.
func controlPlane() []string {
	return []string{"rbac-manager", binCrossplane, binControllers, binAPIServer, binEtcd}
}

// StartControlPlane starts etcd, kube-apiserver and Crossplane core (its
// CRDs from its module, its TLS Secrets) on 127.0.0.1 from an empty run
// directory, and connects the stack's client. Managed resources need no
// more; StartControllers adds kube-controller-manager.
func (s *Stack) StartControlPlane(ctx context.Context) error {
	for _, b := range []string{binEtcd, binAPIServer, binCrossplane} {
		if _, err := os.Stat(mustBinary(b)); err != nil {
			return fmt.Errorf("%s is not built: run `go run ./cluster/local/stackctl build` first", b)
		}
	}
	pki := filepath.Join(s.Run, "pki")
	token, err := certificates(pki)
	if err != nil {
		return err
	}
	s.Stepf("certificates: a CA, the API server's (SAN 127.0.0.1), service-account keys")
	if err := s.writeKubeconfig(token, filepath.Join(pki, "ca.crt")); err != nil {
		return err
	}
	port := func(p int) string { return strconv.Itoa(p + s.PortOffset) }
	etcd := "http://127.0.0.1:" + port(portEtcd)
	peer := "http://127.0.0.1:" + port(portEtcdPeer)
	if _, err := s.Start(ctx, binEtcd, mustBinary(binEtcd), "--name", "local", "--data-dir", filepath.Join(s.Run, "etcd"),
		"--listen-client-urls", etcd, "--advertise-client-urls", etcd, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "local="+peer, "--unsafe-no-fsync", "--listen-metrics-urls", ""); err != nil {
		return err
	}
	if err := s.poll(ctx, binEtcd, 30*time.Second, func() (bool, error) { return httpOK(ctx, http.DefaultClient, etcd+"/health"), nil }); err != nil {
		return err
	}
	api := "https://127.0.0.1:" + port(portAPIServer)
	if _, err := s.Start(ctx, binAPIServer, mustBinary(binAPIServer), "--etcd-servers", etcd,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", port(portAPIServer),
		"--tls-cert-file", filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file", filepath.Join(pki, "apiserver.key"),
		"--client-ca-file", filepath.Join(pki, "ca.crt"), "--token-auth-file", filepath.Join(pki, "tokens.csv"),
		"--authorization-mode", "RBAC", "--service-account-issuer", api,
		"--service-account-key-file", filepath.Join(pki, "sa.pub"), "--service-account-signing-key-file", filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24", "--allow-privileged=true",
		"--disable-admission-plugins", "ServiceAccount", "--endpoint-reconciler-type", "none"); err != nil {
		return err
	}
	hc, err := adminHTTP(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	if err := s.poll(ctx, binAPIServer, 60*time.Second, func() (bool, error) {
		return httpOK(ctx, hc, api+"/readyz", "Authorization", "Bearer "+token), nil
	}); err != nil {
		return err
	}
	if err := s.connect(); err != nil {
		return err
	}
	return s.startCrossplane(ctx, port)
}

// StartControllers starts kube-controller-manager with the controllers the
// stack's objects need: garbage collection, namespace deletion, and
// Deployments' ReplicaSets and pods.
func (s *Stack) StartControllers(ctx context.Context) error {
	if err := s.built(ctx, binControllers); err != nil {
		return err
	}
	port := strconv.Itoa(portControllers + s.PortOffset)
	if _, err := s.Start(ctx, binControllers, mustBinary(binControllers), "--kubeconfig", s.Kubeconfig,
		"--authentication-kubeconfig", s.Kubeconfig, "--authorization-kubeconfig", s.Kubeconfig,
		"--controllers", "garbagecollector,namespace,deployment,replicaset", "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", port, "--use-service-account-credentials=false"); err != nil {
		return err
	}
	s.controllers = true
	return nil
}

// startCrossplane installs Crossplane's CRDs and TLS Secrets (`crossplane
// core init`) and starts its core out of cluster, with the package runtime
// External (nothing here runs images).
func (s *Stack) startCrossplane(ctx context.Context, port func(int) string) error {
	s.Stepf("crossplane core init (CRDs, TLS secrets)")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crossplaneSystem}}
	if err := s.Kube.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	mod, err := moduleDir(ctx, "github.com/crossplane/crossplane/v2", CrossplaneVersion)
	if err != nil {
		return err
	}
	xp := mustBinary(binCrossplane)
	var out []byte
	for i := range 6 {
		init := exec.CommandContext(ctx, xp, "core", "init", "--cr-ds-path="+filepath.Join(mod, "cluster", "crds"), "--enable-webhooks=false",
			"--namespace="+crossplaneSystem, "--tlsca-secret-name=crossplane-root-ca",
			"--tls-client-secret-name=crossplane-tls-client", "--tls-server-secret-name=crossplane-tls-server")
		init.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig)
		if out, err = init.CombinedOutput(); err == nil {
			break
		}
		if i < 5 {
			time.Sleep(2 * time.Second) // "no matches for kind Lock" while CRDs settle
		}
	}
	if err != nil {
		return fmt.Errorf("crossplane core init: %w\n%s", err, out)
	}
	certs := filepath.Join(s.Run, "crossplane-tls-client")
	// NOTE: core writes packages and functions it pulls to these caches; a
	// missing one fails every unpack ("read/write on closed pipe").
	for _, d := range []string{certs, filepath.Join(s.Run, "xpkg-cache"), filepath.Join(s.Run, "xfn-cache")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	client := &corev1.Secret{}
	if err := s.Kube.Get(ctx, types.NamespacedName{Namespace: crossplaneSystem, Name: "crossplane-tls-client"}, client); err != nil {
		return err
	}
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certs, k), client.Data[k], 0o600); err != nil {
			return err
		}
	}
	// Core serves the webhook that makes Usages hold what they name; its
	// certificate comes from core's own CA, like the function's.
	webhookCerts := filepath.Join(s.Run, "crossplane-tls-server")
	if err := s.ServingCerts(ctx, webhookCerts); err != nil {
		return err
	}
	// NOTE: crossplane core binds its metrics, health and webhook ports on
	// all interfaces (it has no flag for the host). `core init` above ran
	// without webhooks: the configurations it would write name an
	// in-cluster Service; registerNoUsages writes the one that matters.
	if _, err := s.Start(ctx, binCrossplane, xp, "core", "start", "--namespace="+crossplaneSystem,
		"--enable-webhooks=true", "--tls-server-certs-dir="+webhookCerts,
		"--package-runtime=External", "--tls-client-certs-dir="+certs,
		"--xpkg-cache-dir="+filepath.Join(s.Run, "xpkg-cache"), "--xfn-cache-dir="+filepath.Join(s.Run, "xfn-cache"),
		"--metrics-port="+port(portXPMetrics), "--health-probe-port="+port(portXPHealth), "--webhook-port="+port(portXPWebhook),
		"--poll-interval=10s"); err != nil {
		return err
	}
	health := "http://127.0.0.1:" + port(portXPHealth) + "/healthz"
	if err := s.poll(ctx, "crossplane core", 90*time.Second, func() (bool, error) { return httpOK(ctx, http.DefaultClient, health), nil }); err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(webhookCerts, "ca.crt"))
	if err != nil {
		return err
	}
	if err := s.registerNoUsages(ctx, mod, port(portXPWebhook), ca); err != nil {
		return err
	}
	s.Stepf("Usages: core's %s webhook registered at https://127.0.0.1:%s", noUsagesPath, port(portXPWebhook))
	s.Stepf("control plane up: export KUBECONFIG=%s", s.Kubeconfig)
	return nil
}

// StartRBACManager starts Crossplane's RBAC manager (`crossplane rbac
// start`), as a Crossplane install does: it gives each installed provider
// revision its ClusterRoles and binds them to the revision's
// ServiceAccount. NOTE: it serves metrics on :8080 (no flag moves it), so
// one stack per machine runs it.
func (s *Stack) StartRBACManager(ctx context.Context) error {
	p, err := s.Start(ctx, "rbac-manager", mustBinary(binCrossplane), "rbac", "start", "--poll-interval=10s")
	if err != nil {
		return err
	}
	// NOTE: it says nothing when it is up (without --debug); it exits at
	// once if it cannot start (:8080 taken).
	time.Sleep(2 * time.Second)
	if p.Exited() {
		log, _ := os.ReadFile(filepath.Join(s.Run, "rbac-manager.log"))
		return fmt.Errorf("the RBAC manager exited:\n%s", log)
	}
	return nil
}

// httpOK is whether GET url answers 2xx within 2 s.
func httpOK(ctx context.Context, c *http.Client, url string, header ...string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// adminHTTP is an HTTP client that trusts the stack's CA.
func adminHTTP(caFile string) (*http.Client, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA certificate in " + caFile)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

// certificates writes, once per run directory, a CA, the API server's
// certificate (SAN 127.0.0.1), the service-account signing key and the
// admin's token (system:masters), and returns the token.
func certificates(dir string) (string, error) {
	tokens := filepath.Join(dir, "tokens.csv")
	if b, err := os.ReadFile(tokens); err == nil {
		return strings.SplitN(string(b), ",", 2)[0], nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	now := time.Now()
	ca, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "provider-terdut-local-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	if err != nil {
		return "", err
	}
	srv, err := issue(&x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca.cert, ca.key)
	if err != nil {
		return "", err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return "", err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return "", err
	}
	token := hex.EncodeToString(tok)
	for name, data := range map[string][]byte{
		"ca.crt":        ca.certPEM,
		"ca.key":        ca.keyPEM,
		"apiserver.crt": srv.certPEM,
		"apiserver.key": srv.keyPEM,
		"sa.key":        pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		"sa.pub":        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"tokens.csv":    []byte(token + `,admin,admin-uid,"system:masters"` + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", err
		}
	}
	return token, nil
}

// An issued certificate with its new P-256 key.
type issued struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
}

// issue makes a P-256 key and a certificate for it from tmpl, signed by
// parent with parentKey, or self-signed when parent is nil.
func issue(tmpl, parent *x509.Certificate, parentKey any) (issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return issued{}, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return issued{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return issued{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return issued{}, err
	}
	return issued{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// writeKubeconfig writes the admin's kubeconfig: the bearer token and the CA.
func (s *Stack) writeKubeconfig(token, ca string) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, portAPIServer+s.PortOffset, ca, token)
	return os.WriteFile(s.Kubeconfig, []byte(kc), 0o600)
}

// Down stops everything started in the run directory run, by its PID files:
// a `make dev` session first, then the provider, doubles and the rest, then
// the control plane. A PID whose process is not one the stack started (its
// command line names neither the cache folder nor the run directory) is
// left alone.
func Down(run string, out func(format string, args ...any)) {
	stop := func(name string) {
		f := filepath.Join(run, name+".pid")
		if _, err := os.Stat(f); err != nil {
			return
		}
		if pid, ok := readPID(f); ok && ours(pid, run) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for i := 0; i < 40 && syscall.Kill(pid, 0) == nil; i++ {
				time.Sleep(250 * time.Millisecond)
			}
			if syscall.Kill(pid, 0) == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			out("%s: stopped (pid %d)", name, pid)
		}
		_ = os.Remove(f)
	}
	stop("dev-session")
	files, _ := filepath.Glob(filepath.Join(run, "*.pid"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if !slices.Contains(controlPlane(), name) {
			stop(name)
		}
	}
	for _, name := range controlPlane() {
		stop(name)
	}
}

// ours is whether pid runs a program the stack started: its command line
// names the cache folder (the binaries, the run directories) or stackctl.
func ours(pid int, run string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	c := string(cmdline)
	return strings.Contains(c, CacheDir()) || strings.Contains(c, run) || strings.Contains(c, "stackctl")
}

// Status says, for each PID file of the run directory, whether it runs.
func Status(run string) []string {
	files, _ := filepath.Glob(filepath.Join(run, "*.pid"))
	if len(files) == 0 {
		return []string{"nothing runs in " + run}
	}
	var out []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if pid, ok := readPID(f); ok && syscall.Kill(pid, 0) == nil && ours(pid, run) {
			out = append(out, fmt.Sprintf("%s: running (pid %d)", name, pid))
		} else {
			out = append(out, name+": not running")
		}
	}
	return out
}
