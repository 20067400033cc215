// Command discover reads a running terdut-server and writes the managed
// resources that take it over: one directory per team, every object
// observe-only with its external name, forProvider as the object is now.
// It sends GETs only (any other request is refused before it leaves), and
// skips every object a managed resource in the cluster already holds.
//
//	go run ./cmd/discover --provider-config default --out imported/
//	kubectl apply -R -f imported/
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/discover"
)

type flags struct {
	providerConfig string
	endpoint       string
	keyFile        string
	namespace      string
	home           string
	out            string
}

func parse(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	fs.StringVar(&f.providerConfig, "provider-config", "", "The provider config the managed resources use: NAME for a ClusterProviderConfig, NAMESPACE/NAME for a ProviderConfig (then every MR goes to that namespace). Its endpoint and key are what discovery reads the server with, unless --endpoint and --key-file say otherwise.")
	fs.StringVar(&f.endpoint, "endpoint", "", "The server's URL, instead of the provider config's (e.g. through kubectl port-forward).")
	fs.StringVar(&f.keyFile, "key-file", "", "A file holding the instance key, instead of the provider config's Secret.")
	fs.StringVar(&f.namespace, "namespace", "", "Put every team's managed resources in this namespace (default: one namespace per team, named after it).")
	fs.StringVar(&f.home, "home-namespace", "crossplane-system", "The provider's namespace: instance-scoped service accounts go there (only there may they be managed).")
	fs.StringVar(&f.out, "out", "", "The directory the manifests are written to (required).")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.providerConfig == "" || f.out == "" {
		return f, errors.New("--provider-config and --out are required")
	}
	if f.keyFile != "" && f.endpoint == "" {
		return f, errors.New("--key-file needs --endpoint")
	}
	return f, nil
}

func main() {
	f, err := parse(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "discover:", err)
		}
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, f)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "discover:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	ref, pcNamespace := reference(f.providerConfig)
	kube, err := kubeClient()
	if err != nil {
		return err
	}
	c, transport, err := serverClient(ctx, kube, f, ref, pcNamespace)
	if err != nil {
		return err
	}
	held, taken, err := discover.InCluster(ctx, kube, ref, pcNamespace)
	if err != nil {
		return err
	}
	o := discover.Options{ProviderConfig: ref, HomeNamespace: f.home, Held: held, Taken: taken}
	switch {
	case pcNamespace != "":
		// NOTE: a ProviderConfig serves its own namespace only, and no
		// instance-scoped account may be managed outside the provider's.
		o.Namespace = func(terdut.Team, string) string { return pcNamespace }
		o.HomeNamespace = ""
	case f.namespace != "":
		o.Namespace = func(terdut.Team, string) string { return f.namespace }
	}
	start := time.Now()
	r, err := discover.Discover(ctx, c, o)
	if err != nil {
		return err
	}
	if err := discover.Write(f.out, r); err != nil {
		return err
	}
	report(r, transport, time.Since(start), f.out)
	return nil
}

// reference is the provider config flag as a reference, and a
// ProviderConfig's namespace.
func reference(s string) (xpv2.ProviderConfigReference, string) {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return xpv2.ProviderConfigReference{Kind: v1alpha1.ProviderConfigKind, Name: name}, ns
	}
	return xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: s}, ""
}

func kubeClient() (client.Client, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster (it holds the provider config and the managed resources discovery must not duplicate): %w", err)
	}
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// serverClient is a client of the provider config's server (or of
// --endpoint with --key-file) that can only read.
func serverClient(ctx context.Context, kube client.Reader, f flags, ref xpv2.ProviderConfigReference, pcNamespace string) (*terdut.Client, *discover.ReadOnly, error) {
	cfg, err := credentials.GetProviderConfig(ctx, kube, ref, pcNamespace)
	if err != nil && f.keyFile == "" {
		return nil, nil, err
	}
	var o terdut.Options
	if err == nil {
		// NOTE: with --key-file the config's key may be unreadable; its CA
		// bundle and timeout still apply.
		o, err = credentials.ClientOptions(ctx, kube, cfg)
		if err != nil && (f.keyFile == "" || !credentials.IsCredentialsMissing(err)) {
			return nil, nil, err
		}
	}
	if f.keyFile != "" {
		key, err := os.ReadFile(f.keyFile)
		if err != nil {
			return nil, nil, err
		}
		o.Token = terdut.Secret(strings.TrimSpace(string(key)))
	}
	if f.endpoint != "" {
		o.Endpoint = f.endpoint
	}
	ro := &discover.ReadOnly{}
	o.Wrap = ro.Around
	o.ListMaxAge = time.Minute
	c, err := terdut.New(o)
	return c, ro, err
}

func report(r discover.Result, t *discover.ReadOnly, took time.Duration, out string) {
	total := 0
	for _, n := range r.Written {
		total += n
	}
	fmt.Printf("wrote %d managed resources to %s in %.1f s (Team %d, EscalationPolicy %d, DeadmanSwitch %d, Integration %d, ServiceAccount %d), all managementPolicies [Observe]\n",
		total, out, took.Seconds(), r.Written[v1alpha1.TeamKind], r.Written[v1alpha1.EscalationPolicyKind], r.Written[v1alpha1.DeadmanSwitchKind], r.Written[v1alpha1.IntegrationKind], r.Written[v1alpha1.ServiceAccountKind])
	fmt.Printf("requests to the server: %s (nothing but GETs is ever sent)\n", strings.Join(t.Sent(), ", "))
	fmt.Printf("namespaces: %s\n", strings.Join(r.Namespaces, ", "))
	for _, s := range r.Skipped {
		fmt.Printf("skipped %s (%s %s): %s\n", s.What, s.Kind, s.ExternalName, s.Why)
	}
}
