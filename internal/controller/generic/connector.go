// Package generic holds what every managed-resource kind of the provider
// shares: one connector (provider config lookup, usage tracking, consent and
// ownership gates, credentials, the client cache) and one setup (gating,
// management policies, change logs, metrics, rate limiting). A kind supplies
// only its external client and its credential strategy.
package generic

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/teamkey"
)

const (
	errTrackUsage = "cannot track provider config usage"
	errNoPCRef    = "spec.providerConfigRef is not set"
	errPCKind     = "spec.providerConfigRef.kind must be ProviderConfig or ClusterProviderConfig"
	errGetPC      = "cannot get %s %q"
)

// Deps are what a kind's external client is built from on each Connect.
type Deps struct {
	// Client talks to the MR's terdut-server with the key the kind's
	// Credentials chose.
	Client *terdut.Client
	// Conn is that server: for a kind that needs other keys (a
	// ServiceAccount) or cleans up team keys (a Team).
	Conn *Conn
	// Kube reads and writes Kubernetes objects (connection Secrets).
	Kube client.Client
	// Reader reads past the cache: for a Secret the external client has
	// just written itself, where a stale read would mint or revoke twice.
	Reader client.Reader
	// Record emits events on the MR.
	Record event.Recorder
	// Adopter adopts what Create finds by its natural key, unless another
	// MR manages it.
	Adopter extclient.Adopter
	// Absence confirms that an object a list omits is gone before
	// anything is made in its place (nil: at once).
	Absence *extclient.Absence
}

// A Tracker records that a managed resource uses its provider config.
type Tracker interface {
	Track(ctx context.Context, mg resource.ModernManaged) error
}

// A Connector produces a kind's external client in a few steps: track the
// provider config usage, resolve the provider config, pass the gates
// (consent, ownership), pick the key (the kind's Credentials), build the
// external client.
type Connector[M resource.ModernManaged] struct {
	Kube        client.Client
	Reader      client.Reader
	Usage       Tracker
	Servers     *Servers
	Record      event.Recorder
	Gates       []Gate[M]
	Credentials Credentials[M]
	Owners      Owners
	External    func(Deps) managed.TypedExternalClient[M]
	// Checks counts this kind's Observe calls (nil: not counted).
	Checks *adjust.Checks
	// Refusals keep the reason a Create was refused on the Ready
	// condition (nil: not kept).
	Refusals *adjust.Refusals
	// Absence confirms absences for this kind (nil: at once).
	Absence *extclient.Absence
	Kind    string
}

// Connect implements managed.TypedExternalConnector.
func (c *Connector[M]) Connect(ctx context.Context, mg M) (managed.TypedExternalClient[M], error) {
	// NOTE: a resource being deleted may be in a terminating namespace,
	// where its usage record cannot be written again; recording it must not
	// keep the resource from cleaning up.
	if err := c.Usage.Track(ctx, mg); err != nil && !meta.WasDeleted(mg) {
		return nil, errors.Wrap(err, errTrackUsage)
	}
	cfg, err := ResolveProviderConfig(ctx, c.Kube, mg)
	if err != nil {
		return nil, err
	}
	for _, admit := range c.Gates {
		if err := admit(ctx, mg, cfg); err != nil {
			if meta.WasDeleted(mg) && extclient.IsUntouchable(err) {
				return untouched[M]{}, nil
			}
			return nil, err
		}
	}
	conn, err := c.Servers.Conn(ctx, cfg)
	if err != nil {
		return nil, err
	}
	conn.namespace = mg.GetNamespace()
	conn.teamMR = func(ctx context.Context, teamID int64) (*v1alpha1.Team, error) {
		return c.Owners.OwnTeam(ctx, mg, teamID)
	}
	cl, err := c.Credentials.Client(ctx, conn, mg)
	if err != nil {
		return nil, err
	}
	if cl == nil {
		return untouched[M]{}, nil
	}
	return adjust.Remembered(c.Refusals, adjust.FinalizedOnCreate(adjust.KeepingGenerations(adjust.Counted(c.Checks, c.Kind, c.External(Deps{
		Client: cl, Conn: conn, Kube: c.Kube, Reader: pastCache(c.Reader, c.Kube), Record: c.Record,
		Adopter: extclient.Adopter{Check: c.Owners.Adoptable(mg), Record: c.Record, Object: mg, Since: mg.GetCreationTimestamp().Time},
		Absence: c.Absence,
	}))))), nil
}

// pastCache is r, the API reader, or kube when there is none (unit tests,
// where kube is not a cache).
func pastCache(r client.Reader, kube client.Reader) client.Reader {
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
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: mg.GetNamespace(), Name: ref.Name}, pc); err != nil {
			return Config{}, errors.Wrapf(err, errGetPC, ref.Kind, mg.GetNamespace()+"/"+ref.Name)
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
