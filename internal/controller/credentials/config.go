package credentials

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/teamkey"
)

const (
	errNoPCRef = "spec.providerConfigRef is not set"
	errPCKind  = "spec.providerConfigRef.kind must be ProviderConfig or ClusterProviderConfig"
	errGetPC   = "cannot get %s %q"
)

// PastCache is r, the API reader, or kube when there is none (unit tests,
// where kube is not a cache).
func PastCache(r client.Reader, kube client.Reader) client.Reader {
	if r != nil {
		return r
	}
	return kube
}

// A Config is a resolved ProviderConfig or ClusterProviderConfig.
type Config struct {
	Kind      string
	Name      string
	Namespace string // empty for a ClusterProviderConfig
	Spec      v1alpha1.ProviderConfigSpec
	// Consent is a ClusterProviderConfig's; nil for a ProviderConfig, which
	// serves its own namespace only.
	Consent *Consent
}

// Consent is who may use a ClusterProviderConfig besides its home namespace.
type Consent struct {
	HomeNamespace string
	Allowed       v1alpha1.AllowedNamespaces
}

// ID names the config in the client cache.
func (c Config) ID() string { return ConfigID(c.Kind, c.Namespace, c.Name) }

// ConfigID names a provider config in the client cache: its kind, its
// namespace (none for a ClusterProviderConfig) and its name.
func ConfigID(kind, namespace, name string) string { return teamkey.ConfigID(kind, namespace, name) }

// ResolveProviderConfig gets the provider config mg references: a
// ProviderConfig in mg's namespace, or a ClusterProviderConfig.
func ResolveProviderConfig(ctx context.Context, kube client.Reader, mg resource.ModernManaged) (Config, error) {
	ref := mg.GetProviderConfigReference()
	if ref == nil || ref.Name == "" {
		return Config{}, errors.New(errNoPCRef)
	}
	return GetProviderConfig(ctx, kube, *ref, mg.GetNamespace())
}

// GetProviderConfig gets the provider config ref names for an MR of
// namespace: a ProviderConfig there, or a ClusterProviderConfig. The caller
// vouches for namespace and ref: an MR's own (ResolveProviderConfig, which
// also refuses a missing ref), or an operator's command line.
func GetProviderConfig(ctx context.Context, kube client.Reader, ref xpv2.ProviderConfigReference, namespace string) (Config, error) {
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, pc); err != nil {
			return Config{}, errors.Wrapf(err, errGetPC, ref.Kind, namespace+"/"+ref.Name)
		}
		return Config{Kind: ref.Kind, Name: pc.Name, Namespace: pc.Namespace, Spec: pc.Spec}, nil
	case v1alpha1.ClusterProviderConfigKind:
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
			return Config{}, errors.Wrapf(err, errGetPC, ref.Kind, ref.Name)
		}
		return Config{Kind: ref.Kind, Name: pc.Name, Spec: pc.Spec.ProviderConfigSpec, Consent: &Consent{HomeNamespace: pc.Spec.HomeNamespace, Allowed: pc.Spec.AllowedNamespaces}}, nil
	default:
		return Config{}, errors.New(errPCKind)
	}
}
