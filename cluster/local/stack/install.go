package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// NOTE: a real install runs the provider as the ServiceAccount of its
// installed revision, with the ClusterRoles Crossplane's RBAC manager makes
// for that revision (plus what the install manifest grants beside them).
// Install does what Crossplane and its Deployment runtime would, with the
// package runtime External (nothing runs in the cluster here): the package
// manager installs the provider's package from a registry on loopback; the
// stack, as the runtime, makes the revision's ServiceAccount and Deployment
// (replicas 0: the provider runs on this machine) and a token for it.

// packageVersion tags the packages the stack builds and installs.
const packageVersion = "v0.0.0-local"

// Identity is what the provider runs as.
type Identity struct {
	// Revision is the installed ProviderRevision.
	Revision string
	// ServiceAccount is namespace/name of the revision's ServiceAccount.
	ServiceAccount string
	// ClusterRole is the RBAC manager's ClusterRole bound to it.
	ClusterRole string
	// User is who the API server says the provider is.
	User string
}

// providerSA is the ServiceAccount cluster/install/provider.yaml's
// DeploymentRuntimeConfig gives the provider.
const (
	providerNamespace = "crossplane-system"
	providerSA        = "provider-terdut"
)

// Install installs the provider's package through Crossplane's package
// manager (cluster/install/provider.yaml, pointed at a registry on
// loopback), starts the RBAC manager, and makes the kubeconfig the provider
// runs with: a token of its revision's ServiceAccount, never an admin's.
func (s *Stack) Install(ctx context.Context) error {
	t0 := time.Now()
	if err := s.StartRBACManager(ctx); err != nil {
		return err
	}
	if _, err := s.StartRegistry(ctx); err != nil {
		return err
	}
	registry := s.RegistryAddr() + "/ryuvia"
	dir := filepath.Join(s.Run, "packages")
	s.Stepf("packages: building and pushing provider-terdut:%s to %s", packageVersion, registry)
	for _, step := range []string{"build", "package", "publish"} {
		if _, err := s.Images(ctx, step, "-version", packageVersion, "-registry", registry, "-platforms", "linux/"+runtime.GOARCH,
			"-images", filepath.Join(dir, "images"), "-packages", filepath.Join(dir, "xpkg")); err != nil {
			return err
		}
	}
	// NOTE: what runs is what ships: the provider and the composition
	// function run from the binaries in their packages' runtime images.
	for _, c := range []struct{ pkg, path, bin string }{
		{"provider-terdut", "/usr/local/bin/provider", "provider"},
		{"function-terdut", "/usr/local/bin/function", "function"},
	} {
		if err := ExtractBinary(ctx, registry+"/"+c.pkg+":"+packageVersion, c.path, s.Bin(c.bin)); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(filepath.Join(s.Root, "cluster/install/provider.yaml"))
	if err != nil {
		return err
	}
	manifest := strings.NewReplacer("xpkg.example.com/ryuvia", registry, "provider-terdut:v0.1.0", "provider-terdut:"+packageVersion).Replace(string(b))
	s.Stepf("Provider: applying cluster/install/provider.yaml (package %s/provider-terdut:%s)", registry, packageVersion)
	if _, err := s.Kubectl(ctx, []byte(manifest), "apply", "-f", "-"); err != nil {
		return err
	}
	rev, uid, err := s.activeRevision(ctx)
	if err != nil {
		return err
	}
	// NOTE: the revision installs its CRDs only once its runtime has given
	// it a TLS Secret.
	certs := filepath.Join(s.Run, "package-tls")
	if err := s.ServingCerts(ctx, certs); err != nil {
		return err
	}
	if err := s.RevisionHealthy(ctx, "providerrevisions", rev, certs, ""); err != nil {
		return err
	}
	if err := s.crdsEstablished(ctx); err != nil {
		return err
	}
	id, err := s.runAs(ctx, rev, uid)
	if err != nil {
		return err
	}
	s.Identity = id
	s.Stepf("provider installed in %s: revision %s; runs as %s (ServiceAccount %s), bound to ClusterRole %s by the RBAC manager",
		time.Since(t0).Round(time.Second), id.Revision, id.User, id.ServiceAccount, id.ClusterRole)
	return nil
}

// Images runs cluster/images (what make images, packages and publish run)
// and returns what it printed.
func (s *Stack) Images(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./cluster/images"}, args...)...)
	cmd.Dir = s.Root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("images %s: %w: %s", args[0], err, out)
	}
	return string(out), nil
}

// activeRevision waits for the provider's Active revision.
func (s *Stack) activeRevision(ctx context.Context) (name, uid string, err error) {
	err = s.poll(ctx, "the provider's Active revision", 3*time.Minute, func() (bool, error) {
		out, err := s.Kubectl(ctx, nil, "get", "providerrevisions", "-l", "pkg.crossplane.io/package=provider-terdut", "-o",
			`jsonpath={range .items[?(@.spec.desiredState=="Active")]}{.metadata.name} {.metadata.uid}{"\n"}{end}`)
		if err != nil {
			return false, nil //nolint:nilerr // Not there yet.
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			return false, nil
		}
		name, uid = f[0], f[1]
		return true, nil
	})
	return name, uid, err
}

// crdsEstablished waits for the provider's CRDs, made by the package
// manager (its kinds through their activated ManagedResourceDefinitions).
func (s *Stack) crdsEstablished(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(s.Root, "package/provider/crds", "*.yaml"))
	if err != nil {
		return err
	}
	var names []string
	for _, f := range files {
		// NOTE: the files are named GROUP_PLURAL.yaml by controller-gen.
		g, p, ok := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		if !ok {
			return fmt.Errorf("%s is not named GROUP_PLURAL.yaml", f)
		}
		names = append(names, "crd/"+p+"."+g)
	}
	return s.poll(ctx, "the provider's CRDs established", 3*time.Minute, func() (bool, error) {
		_, err := s.Kubectl(ctx, nil, append([]string{"wait", "--for", "condition=established", "--timeout=5s"}, names...)...)
		return err == nil, nil
	})
}

// runAs does what Crossplane's Deployment runtime would: the revision's
// ServiceAccount and a Deployment of it, owned by the revision (which is
// how the RBAC manager finds whom to bind its ClusterRole to); then a token
// of that ServiceAccount in a kubeconfig for the provider.
func (s *Stack) runAs(ctx context.Context, rev, uid string) (Identity, error) {
	id := Identity{Revision: rev, ServiceAccount: providerNamespace + "/" + providerSA, ClusterRole: "crossplane:provider:" + rev + ":system"}
	owner := fmt.Sprintf(`{apiVersion: pkg.crossplane.io/v1, kind: ProviderRevision, name: %s, uid: %s, controller: true, blockOwnerDeletion: true}`, rev, uid)
	y := fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {namespace: %[1]s, name: %[2]s, ownerReferences: [%[3]s]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  namespace: %[1]s
  name: %[4]s
  ownerReferences: [%[3]s]
  annotations:
    terdut.ryuvia.com/runtime: "the provider runs outside the cluster (package runtime External); this Deployment only names its ServiceAccount"
spec:
  replicas: 0
  selector: {matchLabels: {pkg.crossplane.io/revision: %[4]s}}
  template:
    metadata: {labels: {pkg.crossplane.io/revision: %[4]s}}
    spec:
      serviceAccountName: %[2]s
      containers: [{name: package-runtime, image: %[5]s/ryuvia/provider-terdut:%[6]s}]
`, providerNamespace, providerSA, owner, rev, s.RegistryAddr(), packageVersion)
	if _, err := s.Kubectl(ctx, []byte(y), "apply", "-f", "-"); err != nil {
		return id, err
	}
	if err := s.poll(ctx, "the RBAC manager's ClusterRoleBinding "+id.ClusterRole, 2*time.Minute, func() (bool, error) {
		out, err := s.Kubectl(ctx, nil, "get", "clusterrolebinding", id.ClusterRole, "-o", `jsonpath={.roleRef.name} {range .subjects[*]}{.namespace}/{.name} {end}`)
		return err == nil && strings.HasPrefix(out, id.ClusterRole+" ") && strings.Contains(out, " "+id.ServiceAccount+" "), nil
	}); err != nil {
		return id, err
	}
	token, err := s.Kubectl(ctx, nil, "-n", providerNamespace, "create", "token", providerSA, "--duration=168h")
	if err != nil {
		return id, err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {token: %q}
contexts:
- name: local
  context: {cluster: local, user: %s}
current-context: local
`, s.Config.Host, s.Config.CAFile, providerSA, strings.TrimSpace(token), providerSA)
	s.ProviderKubeconfig = filepath.Join(s.Run, "provider.kubeconfig")
	if err := os.WriteFile(s.ProviderKubeconfig, []byte(cfg), 0o600); err != nil {
		return id, err
	}
	who := exec.CommandContext(ctx, "kubectl", "--kubeconfig", s.ProviderKubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	out, err := who.CombinedOutput()
	if err != nil {
		return id, fmt.Errorf("kubectl auth whoami as the provider: %w: %s", err, out)
	}
	id.User = string(out)
	return id, nil
}

// poll calls done every half second until it says so, or d has passed.
func (s *Stack) poll(ctx context.Context, what string, d time.Duration, done func() (bool, error)) error {
	end := time.Now().Add(d)
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("timed out after %s waiting for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
