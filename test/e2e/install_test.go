//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/cluster/images/pack"
	"git.ryuvia.com/niklas/provider-terdut/cluster/local/stack"
)

// installer is a second, bare control plane that installs provider-terdut
// the way a user does: from packages in a registry, through Crossplane's
// package manager.
type installer struct {
	t        *testing.T
	s        *stack.Stack
	registry string
	work     string
	crank    string
	function *stack.Process
	certs    string
}

// TestInstallThroughPackageManager: runtime images and packages are built
// (no Docker) and pushed to an in-memory registry on loopback; a
// Configuration object installs the Configuration package, and Crossplane
// resolves and installs the Provider and Function packages it depends on.
// The package runtime is external here: the provider and function binaries
// are pulled out of the pushed images and run, and their revisions marked
// healthy. Then: the packages are Healthy and Installed, their CRDs, MRDs,
// XRDs and Compositions owned by their revisions, the provider's kinds
// activated by a ManagedResourceActivationPolicy (safe-start), a TerdutTeam
// claim Ready (shown by `crossplane beta trace`), and an upgrade to v0.0.2
// keeps every MR Ready and creates no server object twice.
func TestInstallThroughPackageManager(t *testing.T) {
	ctx := t.Context()
	scenariof(t, "images and packages built and pushed to a registry on loopback; a Configuration installs its Provider and Function through the package manager")
	s, err := stack.Up(context.Background(), stack.Options{Root: env.root, Name: "e2e-install", PortOffset: 300, Bare: true})
	if err != nil {
		if s != nil {
			s.Down(context.Background())
		}
		t.Fatal(err)
	}
	defer s.Down(context.Background())
	reg, err := s.StartRegistry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Kill()
	crank, err := stack.Binary("crank")
	if err != nil {
		t.Fatal(err)
	}
	in := &installer{t: t, s: s, registry: s.RegistryAddr() + "/ryuvia", work: t.TempDir(), crank: crank, certs: filepath.Join(s.Run, "package-tls")}
	defer func() {
		if in.function != nil {
			in.function.Kill()
		}
	}()

	in.publish("v0.0.1")
	scenariof(t, "bad input: a package without its runtime image, a registry that is down")
	in.refusals()

	scenariof(t, "a ManagedResourceActivationPolicy and a Configuration object: Crossplane resolves and installs the Provider and Function")
	in.apply(fmt.Sprintf(`apiVersion: apiextensions.crossplane.io/v1alpha1
kind: ManagedResourceActivationPolicy
metadata: {name: terdut}
spec:
  activate: ["*.terdut.ryuvia.com"]
---
apiVersion: pkg.crossplane.io/v1
kind: Configuration
metadata: {name: configuration-terdut}
spec:
  package: %s/configuration-terdut:v0.0.1
`, in.registry))
	in.runRevisions("v0.0.1")
	in.healthy("v0.0.1")
	in.owned()

	scenariof(t, "a TerdutTeam claim through the installed packages -> Ready; crossplane beta trace shows the tree")
	if err := s.ApplyProviderConfig(ctx, s.Double); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Kubectl(ctx, nil, "get", "secret", "-n", "crossplane-system", "terdut-instance-credentials", "-o", "jsonpath={.metadata.annotations}"); err != nil || strings.Contains(a, "last-applied-configuration") {
		// NOTE: a or err would show the key: neither is printed.
		t.Fatalf("the instance key Secret applied as docs/install.md says: read failed: %t; carries a last-applied-configuration annotation (the key in plain text): %t", err != nil, strings.Contains(a, "last-applied-configuration"))
	}
	in.apply(`apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {terdut.ryuvia.com/allowed-server: default}}
---
apiVersion: platform.terdut.ryuvia.com/v1alpha1
kind: TerdutTeam
metadata: {name: web, namespace: team-a}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: default}
  displayName: Web
  escalationPolicy:
    levels: [{timeout: 5m, targets: [{kind: oncall}]}]
  deadmanSwitches: [{name: watchdog, matcher: alertname=Watchdog}]
  integrations: [{name: am}]
`)
	in.wait("the TerdutTeam claim Ready", 4*time.Minute, func() string {
		out, err := s.Kubectl(ctx, nil, "-n", "team-a", "get", "terdutteam", "web", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.summary}")
		if err != nil || !strings.HasPrefix(out, "True") {
			return out
		}
		return ""
	})
	trace := in.trace()
	fmt.Printf("    $ crossplane beta trace terdutteam web -n team-a\n%s", indent(trace))
	if bad := notSyncedAndReady(trace, 6); len(bad) > 0 {
		t.Errorf("crossplane beta trace: %v", bad)
	}
	before := in.serverCounts()

	scenariof(t, "upgrade: push v0.0.2 and bump the packages -> every MR stays Ready, no server object is made twice")
	in.publish("v0.0.2")
	for _, p := range []string{"configurations.pkg.crossplane.io/configuration-terdut", "providers.pkg.crossplane.io/ryuvia-provider-terdut", "functions.pkg.crossplane.io/ryuvia-function-terdut"} {
		kind, name, _ := strings.Cut(p, "/")
		pkg := strings.TrimPrefix(name, "ryuvia-")
		in.kubectl("patch", kind, name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"package":"%s/%s:v0.0.2"}}`, in.registry, pkg))
	}
	in.runRevisions("v0.0.2")
	in.healthy("v0.0.2")
	// The MRs still show what v0.0.1 wrote: wait for v0.0.2 to read every
	// object of the team twice, then for every MR Ready for its generation.
	st, err := s.Double.State(ctx)
	if err != nil || len(st.Teams) != 1 {
		t.Fatalf("the double holds %d teams (%v), want the claim's one", len(st.Teams), err)
	}
	id := st.Teams[0].ID
	polledAt(t, s.Double.URL, 2, "/api/teams", fmt.Sprintf("/api/teams/%d/escalation", id), fmt.Sprintf("/api/teams/%d/deadman/switches", id), fmt.Sprintf("/api/teams/%d/integrations", id))
	in.wait("every MR Ready for its generation after the upgrade", 3*time.Minute, func() string {
		out, err := s.Kubectl(ctx, nil, "get", "managed", "-A", "-o",
			`jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.generation} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].observedGeneration} {.status.conditions[?(@.type=="Synced")].status} {.status.conditions[?(@.type=="Synced")].observedGeneration}{"\n"}{end}`)
		if err != nil {
			return err.Error()
		}
		n := 0
		for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			n++
			if f := strings.Fields(l); len(f) != 6 || f[2] != "True" || f[3] != f[1] || f[4] != "True" || f[5] != f[1] {
				return "not Ready and Synced for its generation (name, generation, Ready, its generation, Synced, its generation): " + l
			}
		}
		if n != 4 {
			return fmt.Sprintf("%d MRs, want the claim's 4", n)
		}
		return ""
	})
	after := in.serverCounts()
	fmt.Printf("    server objects before and after the upgrade: %s / %s\n", before, after)
	if before != after {
		t.Errorf("the upgrade changed the server: %s -> %s", before, after)
	}
	in.kubectl("-n", "team-a", "delete", "terdutteam", "web", "--wait=true", "--timeout=180s")
	in.noKeyLeaked()
}

// noKeyLeaked: no secret this stack's double issued is in its provider's
// or function's log; they join the suite's own output check.
func (in *installer) noKeyLeaked() {
	in.t.Helper()
	issued, err := in.s.Double.Issued(in.t.Context())
	if err != nil {
		in.t.Fatal(err)
	}
	issued = append(issued, in.s.Double.AdminKey.Reveal())
	env.issued = append(env.issued, issued...)
	for _, name := range []string{"provider.log", "function.log"} {
		b, _ := os.ReadFile(filepath.Join(in.s.Run, name))
		for _, k := range issued {
			if strings.Contains(string(b), k) {
				in.t.Errorf("an issued key appears in the installed %s", name)
			}
		}
	}
}

func (in *installer) kubectl(args ...string) string {
	in.t.Helper()
	out, err := in.s.Kubectl(in.t.Context(), nil, args...)
	if err != nil {
		in.t.Fatal(err)
	}
	return out
}

func (in *installer) apply(y string) {
	in.t.Helper()
	if _, err := in.s.Kubectl(in.t.Context(), []byte(y), "apply", "-f", "-"); err != nil {
		in.t.Fatal(err)
	}
}

func (in *installer) wait(what string, d time.Duration, check func() string) {
	in.t.Helper()
	defer func() {
		if in.t.Failed() {
			out, _ := in.s.Kubectl(context.Background(), nil, "get", "pkg,pkgrev,mrd", "-o", "wide")
			conds, _ := in.s.Kubectl(context.Background(), nil, "get", "pkgrev", "-o", `jsonpath={range .items[*]}{.metadata.name}: {.status.conditions}{"\n"}{end}`)
			fmt.Printf("    packages when it failed:\n%s%s", indent(out), indent(conds))
		}
	}()
	eventually(in.t, d, what, check)
}

// images runs cluster/images (what make images, packages and publish run).
func (in *installer) images(args ...string) error {
	out, err := in.s.Images(in.t.Context(), args...)
	fmt.Print(indent(out))
	return err
}

// publish builds the images and packages of a version for this machine's
// platform and pushes them.
func (in *installer) publish(version string) {
	in.t.Helper()
	common := []string{
		"-version", version, "-registry", in.registry, "-platforms", "linux/" + runtime.GOARCH,
		"-images", filepath.Join(in.work, "images"), "-packages", filepath.Join(in.work, "xpkg"),
	}
	for _, step := range []string{"build", "package", "publish"} {
		if err := in.images(append([]string{step}, common...)...); err != nil {
			in.t.Fatal(err)
		}
	}
}

// refusals: a package pushed without its runtime image, and a registry that
// is down, each give a clear error.
func (in *installer) refusals() {
	in.t.Helper()
	bad := filepath.Join(in.work, "bad")
	if err := os.MkdirAll(bad, 0o750); err != nil {
		in.t.Fatal(err)
	}
	// The provider's package without its runtime image: what
	// `crossplane xpkg build` makes when it is not given one.
	img, err := pack.Package(filepath.Join(env.root, "package/provider"), nil, time.Unix(0, 0))
	if err != nil {
		in.t.Fatal(err)
	}
	if err := pack.WriteFile(filepath.Join(bad, "provider-terdut-"+runtime.GOARCH+".xpkg"), "provider-terdut:v0.0.9", img); err != nil {
		in.t.Fatal(err)
	}
	err = in.images("publish", "-version", "v0.0.9", "-registry", in.registry, "-platforms", "linux/"+runtime.GOARCH, "-packages", bad)
	if err == nil || !strings.Contains(err.Error(), "carries no runtime image") {
		in.t.Errorf("publishing a package without its runtime image: %v, want a refusal that says so", err)
	}
	fmt.Printf("    a package without its runtime image: %s\n", lastLine(err))
	err = in.images("publish", "-version", "v0.0.1", "-registry", "127.0.0.1:1/ryuvia", "-platforms", "linux/"+runtime.GOARCH, "-packages", filepath.Join(in.work, "xpkg"))
	if err == nil || !strings.Contains(err.Error(), "is the registry 127.0.0.1:1/ryuvia up") {
		in.t.Errorf("publishing to a registry that is down: %v, want an error that names it", err)
	}
	fmt.Printf("    a registry that is down: %s\n", lastLine(err))
}

func lastLine(err error) string {
	if err == nil {
		return "no error"
	}
	for l := range strings.SplitSeq(err.Error(), "\n") {
		if strings.Contains(l, "images:") {
			return strings.TrimSpace(l)
		}
	}
	return firstLine(err.Error())
}

// revision waits for the Active revision of a package at version.
func (in *installer) revision(resource, pkg, version string) string {
	in.t.Helper()
	var name string
	in.wait(resource+" of "+pkg+":"+version, 2*time.Minute, func() string {
		out, err := in.s.Kubectl(in.t.Context(), nil, "get", resource, "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.image} {.spec.desiredState}{"\n"}{end}`)
		if err != nil {
			return err.Error()
		}
		for l := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(l); len(f) == 3 && strings.HasSuffix(f[1], pkg+":"+version) && f[2] == "Active" {
				name = f[0]
				return ""
			}
		}
		return "no Active revision yet: " + out
	})
	return name
}

// runRevisions does what a package runtime would: it runs the provider and
// function binaries pulled out of the pushed images, and marks their
// revisions healthy.
func (in *installer) runRevisions(version string) {
	in.t.Helper()
	ctx := in.t.Context()
	pr := in.revision("providerrevisions", "provider-terdut", version)
	fr := in.revision("functionrevisions", "function-terdut", version)
	if err := in.s.ServingCerts(ctx, in.certs); err != nil {
		in.t.Fatal(err)
	}
	in.s.StopProvider()
	if err := stack.ExtractBinary(ctx, in.registry+"/provider-terdut:"+version, "/usr/local/bin/provider", in.s.Bin("provider")); err != nil {
		in.t.Fatal(err)
	}
	if err := in.s.StartProvider(ctx, "--poll=4s", "--debug"); err != nil {
		in.t.Fatal(err)
	}
	if in.function != nil {
		in.function.Stop()
	}
	fn := in.s.Bin("function-" + version)
	if err := stack.ExtractBinary(ctx, in.registry+"/function-terdut:"+version, "/usr/local/bin/function", fn); err != nil {
		in.t.Fatal(err)
	}
	p, err := in.s.Start(ctx, "function", fn, "--address", in.s.FunctionAddr(), "--tls-server-certs-dir", in.certs)
	if err != nil {
		in.t.Fatal(err)
	}
	in.function = p
	for _, r := range []struct{ resource, name, endpoint string }{{"providerrevisions", pr, ""}, {"functionrevisions", fr, in.s.FunctionAddr()}} {
		if err := in.s.RevisionHealthy(ctx, r.resource, r.name, in.certs, r.endpoint); err != nil {
			in.t.Fatal(err)
		}
	}
	fmt.Printf("    running %s and %s at %s, pulled out of %s/{provider,function}-terdut:%s\n", pr, fr, version, in.registry, version)
}

// healthy waits until the three packages are Installed and Healthy at version.
func (in *installer) healthy(version string) {
	in.t.Helper()
	var lines []string
	in.wait("the packages Installed and Healthy at "+version, 3*time.Minute, func() string {
		lines = lines[:0]
		for _, p := range []string{"configurations.pkg.crossplane.io/configuration-terdut", "providers.pkg.crossplane.io/ryuvia-provider-terdut", "functions.pkg.crossplane.io/ryuvia-function-terdut"} {
			out, err := in.s.Kubectl(in.t.Context(), nil, "get", p, "-o",
				`jsonpath={.kind} {.metadata.name} {.spec.package} {.status.conditions[?(@.type=="Installed")].status} {.status.conditions[?(@.type=="Healthy")].status}`)
			if err != nil {
				return err.Error()
			}
			if f := strings.Fields(out); len(f) != 5 || !strings.HasSuffix(f[2], ":"+version) || f[3] != "True" || f[4] != "True" {
				return "not yet: " + out
			}
			lines = append(lines, out)
		}
		return ""
	})
	fmt.Printf("    installed packages (kind, name, package, Installed, Healthy):\n%s", indent(strings.Join(lines, "\n")))
}

// owned checks that the package manager established the packages' objects
// and owns them: MRDs and provider config CRDs by the ProviderRevision, the
// MRs' CRDs by their MRDs, XRDs and Compositions by the ConfigurationRevision.
func (in *installer) owned() {
	in.t.Helper()
	owners := func(resource string) map[string]string {
		out := in.kubectl("get", resource, "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences[?(@.controller==true)].kind}{"\n"}{end}`)
		m := map[string]string{}
		for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				m[f[0]] = f[1]
			} else if len(f) == 1 {
				m[f[0]] = ""
			}
		}
		return m
	}
	mrds, crds, xrds, comps := owners("managedresourcedefinitions"), owners("crds"), owners("compositeresourcedefinitions"), owners("compositions")
	mrdStates := in.kubectl("get", "managedresourcedefinitions", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.state} {end}`)
	for _, k := range []string{"teams", "escalationpolicies", "deadmanswitches", "integrations", "serviceaccounts"} {
		if mrds[k+".terdut.ryuvia.com"] != "ProviderRevision" {
			in.t.Errorf("MRD %s.terdut.ryuvia.com controlled by %q, want the ProviderRevision", k, mrds[k+".terdut.ryuvia.com"])
		}
		if !strings.Contains(mrdStates, k+".terdut.ryuvia.com=Active") {
			in.t.Errorf("MRD %s.terdut.ryuvia.com is not Active: %s", k, mrdStates)
		}
	}
	for _, k := range []string{"providerconfigs", "clusterproviderconfigs", "providerconfigusages"} {
		if crds[k+".terdut.ryuvia.com"] != "ProviderRevision" {
			in.t.Errorf("CRD %s.terdut.ryuvia.com controlled by %q, want the ProviderRevision", k, crds[k+".terdut.ryuvia.com"])
		}
	}
	for _, k := range []string{"xterdutteams", "xterdutservers"} {
		if xrds[k+".platform.terdut.ryuvia.com"] != "ConfigurationRevision" || comps[k+".platform.terdut.ryuvia.com"] != "ConfigurationRevision" {
			in.t.Errorf("XRD/Composition %s controlled by %q/%q, want the ConfigurationRevision", k, xrds[k+".platform.terdut.ryuvia.com"], comps[k+".platform.terdut.ryuvia.com"])
		}
	}
	fmt.Printf("    MRDs (safe-start, activated by ManagedResourceActivationPolicy terdut): %s\n", strings.TrimSpace(mrdStates))
}

// notSyncedAndReady reads `crossplane beta trace` output by its header's
// columns and lists each line whose SYNCED or READY is not True, and a tree
// of other than want lines.
func notSyncedAndReady(trace string, want int) []string {
	lines := strings.Split(strings.TrimSpace(trace), "\n")
	head := []rune(lines[0])
	col := func(name string) int {
		i := strings.Index(lines[0], name)
		if i < 0 {
			return -1
		}
		return len([]rune(lines[0][:i]))
	}
	synced, ready := col("SYNCED"), col("READY")
	if synced < 0 || ready < 0 {
		return []string{"no SYNCED and READY columns in " + string(head)}
	}
	cell := func(l []rune, at int) string {
		if at >= len(l) {
			return ""
		}
		f := strings.Fields(string(l[at:]))
		if len(f) == 0 {
			return ""
		}
		return f[0]
	}
	var bad []string
	for _, l := range lines[1:] {
		r := []rune(l)
		if cell(r, synced) != "True" || cell(r, ready) != "True" {
			bad = append(bad, "not Synced and Ready: "+l)
		}
	}
	if len(lines)-1 != want {
		bad = append(bad, fmt.Sprintf("%d objects in the tree, want %d", len(lines)-1, want))
	}
	return bad
}

// trace runs `crossplane beta trace` on the claim.
func (in *installer) trace() string {
	in.t.Helper()
	cmd := exec.CommandContext(in.t.Context(), in.crank, "beta", "trace", "terdutteam", "web", "-n", "team-a")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+in.s.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		in.t.Fatalf("crossplane beta trace: %v: %s", err, out)
	}
	return string(out)
}

// serverCounts says what the double holds and how many objects were ever
// made on it.
func (in *installer) serverCounts() string {
	in.t.Helper()
	st, err := in.s.Double.State(in.t.Context())
	if err != nil {
		in.t.Fatal(err)
	}
	c, err := in.s.Double.Counters(in.t.Context())
	if err != nil {
		in.t.Fatal(err)
	}
	return fmt.Sprintf("%d teams, %d switches, %d integrations (POSTs: %d teams, %d switches, %d integrations)", len(st.Teams), len(st.Switches), len(st.Integrations),
		c["POST /api/teams"], c["POST /api/teams/{id}/deadman/switches"], c["POST /api/teams/{id}/integrations"])
}
