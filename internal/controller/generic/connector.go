// Package generic holds what every managed-resource kind of the provider
// shares: one connector (provider config lookup, usage tracking, credentials,
// the client cache) and one setup (gating, management policies, change logs,
// metrics, rate limiting). A kind supplies only its external client.
package generic

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

const (
	errTrackUsage      = "cannot track provider config usage"
	errNoPCRef         = "spec.providerConfigRef is not set"
	errPCKind          = "spec.providerConfigRef.kind must be ProviderConfig or ClusterProviderConfig"
	errGetPC           = "cannot get %s %q"
	errGetCreds        = "cannot read the credentials of %s %q"
	errEmptyCreds      = "the credentials of %s %q are empty"
	errGetCA           = "cannot read the CA bundle of %s %q"
	errForeignSecret   = "%s %q may only use Secrets in its own namespace %q, not %q"
	errNewClient       = "cannot build a terdut-server client for %s %q"
	errMissingSecretNS = "%s %q: a ClusterProviderConfig's secret selectors need a namespace"
	errKeyUnchanged    = "the key was refused and the credential Secret holds no other"
)

// Deps are what a kind's external client is built from on each Connect.
type Deps struct {
	// Client talks to the terdut-server of the MR's provider config.
	Client *terdut.Client
	// Kube reads and writes Kubernetes objects (connection Secrets).
	Kube client.Client
	// Reader reads past the cache: for a Secret the external client has
	// just written itself, where a stale read would mint or revoke twice.
	Reader client.Reader
	// Record emits events on the MR.
	Record event.Recorder
	// Adoptable says whether Create may take over an object it found by its
	// natural key or after a 409: not one another MR manages.
	Adoptable Adoptable
	// RevokeTeamKey removes a team's scoped service account and key Secret;
	// a Team calls it when it is deleted. Nil when the config does not use
	// team-scoped keys.
	RevokeTeamKey func(ctx context.Context, teamID int64) error
	// WithKey builds a client for the same server with another key.
	WithKey func(terdut.Secret) (*terdut.Client, error)
	// Authenticated is false when the provider config's key is missing
	// (only for kinds with OptionalCredentials).
	Authenticated bool
}

// A Tracker records that a managed resource uses its provider config.
type Tracker interface {
	Track(ctx context.Context, mg resource.ModernManaged) error
}

// A Connector produces a kind's external client: it tracks the provider
// config usage, resolves the ProviderConfig or ClusterProviderConfig,
// extracts its credentials and takes a cached terdut client for them.
type Connector[M resource.ModernManaged] struct {
	Kube     client.Client
	Usage    Tracker
	Clients  *terdut.Cache
	Record   event.Recorder
	External func(Deps) managed.TypedExternalClient[M]
	// Owners checks that mg does not take over another MR's object.
	Owners Owners
	// TeamOf returns the team an MR belongs to, once known; nil for kinds
	// that belong to no team. That team must be a Team of its namespace.
	TeamOf func(M) (int64, bool)
	// UseTeamKey makes the MR talk to the server with its team's scoped key.
	UseTeamKey bool
	// TeamKeys keeps the team-scoped keys children use.
	TeamKeys *TeamKeys
	// OptionalCredentials lets Connect go on without the config's key (a
	// bootstrapping ServiceAccount writes the very Secret it names).
	OptionalCredentials bool
	// ProviderNamespace is the provider's own (operator) namespace: managed
	// resources there are the platform's and always admitted.
	ProviderNamespace string
	// Reader reads the credential Secret past the cache when a key is
	// refused, to pick up a rotated one at once.
	Reader client.Reader
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
	// NOTE: consent is checked on every Connect, so narrowing it revokes at
	// the next reconcile; but not while deleting: a refused MR must still be
	// able to clean up what it made (seed §4.6).
	if !meta.WasDeleted(mg) && (c.ProviderNamespace == "" || mg.GetNamespace() != c.ProviderNamespace) {
		if err := Permitted(ctx, c.Kube, cfg, mg.GetNamespace()); err != nil {
			if IsNotPermitted(err) {
				mg.SetConditions(Unavailable(ReasonRefNotPermitted, err.Error()))
			}
			return nil, err
		}
	}
	if err := c.owned(ctx, mg); err != nil {
		if IsNotOwned(err) && meta.WasDeleted(mg) {
			// NOTE: not its object: let the MR go, and touch nothing.
			return untouched[M]{}, nil
		}
		return nil, err
	}
	o, err := ClientOptions(ctx, c.Kube, cfg)
	authenticated := err == nil
	switch {
	case err != nil && c.OptionalCredentials && IsCredentialsMissing(err):
		// o holds the endpoint, timeout and CA bundle, without a key.
	case err != nil:
		return nil, err
	default:
		o.Refresh = c.refreshFrom(cfg, o.Token)
	}
	id := cfg.ID()
	if !authenticated {
		id += "/unauthenticated"
	}
	cl, err := c.Clients.Get(id, o)
	if err != nil {
		return nil, errors.Wrapf(err, errNewClient, cfg.Kind, cfg.Name)
	}
	withKey := func(tok terdut.Secret) (*terdut.Client, error) {
		wo := o
		wo.Token, wo.Refresh = tok, nil
		return terdut.New(wo)
	}
	d := Deps{Client: cl, Kube: c.Kube, Reader: pastCache(c.Reader, c.Kube), Record: c.Record, Adoptable: c.Owners.Adoptable(mg), WithKey: withKey, Authenticated: authenticated}
	if c.TeamKeys == nil || !teamScoped(cfg) {
		return c.External(d), nil
	}
	if !c.UseTeamKey {
		// A Team (or a ServiceAccount): it uses the config's key; a Team
		// removes its team's scoped key when it goes.
		d.RevokeTeamKey = func(ctx context.Context, teamID int64) error { return c.TeamKeys.Revoke(ctx, cfg, cl, teamID) }
		return c.External(d), nil
	}
	// NOTE: a child never gets the instance key: it talks to the server with
	// its team's scoped key, minted here on first need.
	teamID, ok := c.TeamOf(mg)
	switch {
	case !ok && meta.WasDeleted(mg):
		// NOTE: a child that never learned its team's ID never made
		// anything on the server: let it go.
		return untouched[M]{}, nil
	case !ok:
		return nil, errors.New(errTeamUnknown)
	case meta.WasDeleted(mg):
		// NOTE: deleting a team deletes its rows (and its scoped key) on
		// the server. A child deleted with its team, as a claim's are,
		// may find the team gone: then so is the child, and minting a
		// key for a team that does not exist would keep its finalizer
		// forever. Only a real 404 counts; any other error retries.
		_, err := cl.GetTeam(ctx, teamID)
		if terdut.IsNotFound(err) {
			return untouched[M]{}, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, errGetTeamOfChild, teamID)
		}
	}
	to, err := c.TeamKeys.Options(ctx, cfg, o, cl, teamID)
	if err != nil {
		return nil, err
	}
	if d.Client, err = c.Clients.Get(cfg.ID()+"/team/"+FormatID(teamID), to); err != nil {
		return nil, errors.Wrapf(err, errNewClient, cfg.Kind, cfg.Name)
	}
	return c.External(d), nil
}

// pastCache is r, the API reader, or kube when there is none (unit tests,
// where kube is not a cache).
func pastCache(r client.Reader, kube client.Client) client.Reader {
	if r != nil {
		return r
	}
	return kube
}

// refreshFrom re-reads the config's key past the cache when the server
// refuses the current one: after a rotation the new key is already in the
// Secret, and the request is retried with it instead of failing.
func (c *Connector[M]) refreshFrom(cfg Config, current terdut.Secret) func(context.Context) (terdut.Secret, error) {
	if c.Reader == nil {
		return nil
	}
	return func(ctx context.Context) (terdut.Secret, error) {
		o, err := ClientOptions(ctx, c.Reader, cfg)
		if err != nil {
			return "", err
		}
		if o.Token == current {
			return "", errors.New(errKeyUnchanged)
		}
		return o.Token, nil
	}
}

// teamScoped reports whether children of cfg use team-scoped keys (the
// default).
func teamScoped(cfg Config) bool {
	return cfg.Spec.TeamScopedCredentials == nil || *cfg.Spec.TeamScopedCredentials
}

// owned runs the ownership checks: mg's external name is not another MR's
// object, and a child's team is a Team of its own namespace.
func (c *Connector[M]) owned(ctx context.Context, mg M) error {
	if c.Owners.Kube == nil {
		return nil
	}
	if err := c.Owners.CheckExternalName(ctx, mg); err != nil {
		return err
	}
	if c.TeamOf == nil {
		return nil
	}
	if id, ok := c.TeamOf(mg); ok {
		return c.Owners.CheckTeam(ctx, mg, id)
	}
	return nil
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
func (c Config) ID() string {
	if c.Namespace == "" {
		return c.Kind + "/" + c.Name
	}
	return c.Kind + "/" + c.Namespace + "/" + c.Name
}

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

// secretNamespace checks that a namespaced ProviderConfig selects Secrets of
// its own namespace only (defaulting an empty one to it), and that a
// ClusterProviderConfig names one.
func secretNamespace(cfg Config, sel *xpv2.SecretKeySelector) error {
	if sel == nil {
		return nil
	}
	switch {
	case cfg.Namespace == "" && sel.Namespace == "":
		return errors.Errorf(errMissingSecretNS, cfg.Kind, cfg.Name)
	case cfg.Namespace != "" && sel.Namespace == "":
		sel.Namespace = cfg.Namespace
	case cfg.Namespace != "" && sel.Namespace != cfg.Namespace:
		return errors.Errorf(errForeignSecret, cfg.Kind, cfg.Name, cfg.Namespace, sel.Namespace)
	}
	return nil
}

type credentialsMissing struct{ error }

// IsCredentialsMissing reports whether err says the config's key does not
// exist (yet) or is empty.
func IsCredentialsMissing(err error) bool {
	var m credentialsMissing
	return errors.As(err, &m)
}

// ClientOptions reads the key and CA bundle a config points at. When the key
// is missing (IsCredentialsMissing), the options it returns still hold the
// endpoint, timeout and CA bundle: a bootstrapping ServiceAccount talks to
// the server without a key, but never without its CA.
func ClientOptions(ctx context.Context, kube client.Reader, cfg Config) (terdut.Options, error) {
	o, err := serverOptions(ctx, kube, cfg)
	if err != nil {
		return terdut.Options{}, err
	}
	creds := cfg.Spec.Credentials
	sel := creds.CommonCredentialSelectors.DeepCopy()
	if err := secretNamespace(cfg, sel.SecretRef); err != nil {
		return terdut.Options{}, err
	}
	raw, err := extract(ctx, creds.Source, kube, *sel)
	if kerrors.IsNotFound(err) {
		return o, credentialsMissing{errors.Wrapf(err, errGetCreds, cfg.Kind, cfg.Name)}
	}
	if err != nil {
		return terdut.Options{}, errors.Wrapf(err, errGetCreds, cfg.Kind, cfg.Name)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return o, credentialsMissing{errors.Errorf(errEmptyCreds, cfg.Kind, cfg.Name)}
	}
	o.Token = terdut.Secret(token)
	return o, nil
}

// serverOptions are a config's endpoint, timeout and CA bundle: everything
// but the key.
func serverOptions(ctx context.Context, kube client.Reader, cfg Config) (terdut.Options, error) {
	o := terdut.Options{Endpoint: cfg.Spec.Endpoint}
	if cfg.Spec.RequestTimeout != nil {
		o.Timeout = cfg.Spec.RequestTimeout.Duration
	}
	ca := cfg.Spec.CABundleSecretRef.DeepCopy()
	if ca == nil {
		return o, nil
	}
	if err := secretNamespace(cfg, ca); err != nil {
		return terdut.Options{}, err
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: ca.Namespace, Name: ca.Name}, s); err != nil {
		return terdut.Options{}, errors.Wrapf(err, errGetCA, cfg.Kind, cfg.Name)
	}
	o.CABundle = s.Data[ca.Key]
	return o, nil
}

// extract reads a key from a Secret through any reader (the cache, or the API
// server directly when refreshing), or from the environment or a file.
func extract(ctx context.Context, source xpv2.CredentialsSource, kube client.Reader, sel xpv2.CommonCredentialSelectors) ([]byte, error) {
	if source != xpv2.CredentialsSourceSecret || sel.SecretRef == nil {
		return resource.CommonCredentialExtractor(ctx, source, nil, sel)
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: sel.SecretRef.Namespace, Name: sel.SecretRef.Name}, s); err != nil {
		return nil, err
	}
	return s.Data[sel.SecretRef.Key], nil
}
