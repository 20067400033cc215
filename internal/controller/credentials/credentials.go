package credentials

import (
	"context"
	"crypto/subtle"
	"slices"
	"strings"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
)

const (
	errGetCreds        = "cannot read the credentials of %s %q"
	errEmptyCreds      = "the credentials of %s %q are empty"
	errGetCA           = "cannot read the CA bundle of %s %q"
	errForeignSecret   = "%s %q may only use Secrets in its own namespace %q, not %q"
	errNewClient       = "cannot build a terdut-server client for %s %q"
	errMissingSecretNS = "%s %q: a ClusterProviderConfig's secret selectors need a namespace"
	errKeyUnchanged    = "the key was refused and the credential Secret holds no other"
	errGetTeamOfChild  = "cannot check whether team %d still exists"
	errSourceNotSecret = "%s %q reads its key from %s: a namespaced ProviderConfig may only read it from a Secret in its own namespace (credentials.source: Secret). Nothing was read"
)

// Credentials choose the key a kind's external client talks to
// terdut-server with. Client returns nil (and no error) when mg has nothing
// on the server to touch: its external client then does nothing.
type Credentials[M resource.ModernManaged] interface {
	Client(ctx context.Context, conn *Conn, mg M) (*terdut.Client, error)
}

// InstanceKey is the provider config's own key: Teams use it.
func InstanceKey[M resource.ModernManaged]() Credentials[M] { return instanceKey[M]{} }

type instanceKey[M resource.ModernManaged] struct{}

func (instanceKey[M]) Client(_ context.Context, conn *Conn, _ M) (*terdut.Client, error) {
	return conn.Instance()
}

// BootstrapKey is the provider config's key when it has one, and no key
// otherwise: a bootstrapping ServiceAccount's provider config names the very
// Secret it writes.
func BootstrapKey[M resource.ModernManaged]() Credentials[M] { return bootstrapKey[M]{} }

type bootstrapKey[M resource.ModernManaged] struct{}

func (bootstrapKey[M]) Client(_ context.Context, conn *Conn, _ M) (*terdut.Client, error) {
	if conn.Authenticated() {
		return conn.Instance()
	}
	return conn.WithKey("unauthenticated", "")
}

// TeamKey is a key scoped to the MR's team: a child never holds the
// instance key, whether it creates, only observes or is being deleted.
// teamOf returns the team once it is known. The key is its Team MR's: minted
// only while a Team of the child's namespace holds the team and is not being
// deleted, and revoked when that Team goes, whatever its management
// policies. A child with no such Team (and no key kept) waits, with reason
// WaitingForTeam. With teamScopedCredentials off, it is the provider
// config's key.
func TeamKey[M resource.ModernManaged](teamOf func(M) (int64, bool)) Credentials[M] {
	return teamKey[M]{teamOf: teamOf}
}

type teamKey[M resource.ModernManaged] struct {
	teamOf func(M) (int64, bool)
}

func (k teamKey[M]) Client(ctx context.Context, conn *Conn, mg M) (*terdut.Client, error) {
	instance, err := conn.Instance()
	if err != nil || !conn.TeamScoped() {
		return instance, err
	}
	teamID, ok := k.teamOf(mg)
	switch {
	case !ok && meta.WasDeleted(mg):
		// NOTE: a child that never learned its team's ID never made
		// anything on the server: let it go.
		return nil, nil
	case !ok:
		return nil, errors.New(extclient.ErrTeamUnknown)
	case meta.WasDeleted(mg):
		// NOTE: deleting a team deletes its rows (and its scoped key) on
		// the server. A child deleted with its team, as a claim's are,
		// may find the team gone: then so is the child, and waiting for
		// a key of a team that does not exist would keep its finalizer
		// forever. Only the server's own 404 counts (a list may omit a
		// team that exists); any other error retries. The provider reads
		// this with the config's key; the child's client never gets it.
		_, err := instance.ReadTeam(ctx, teamID)
		if terdut.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, errGetTeamOfChild, teamID)
		}
	}
	cl, err := conn.Team(ctx, teamID)
	if w := (waitingForTeamError{}); errors.As(err, &w) {
		extclient.Mark(mg, extclient.Unavailable(ReasonWaitingForTeam, w.Error()))
	}
	return cl, err
}

// Allows reports whether mg's management policies allow any of actions (no
// policies, or "*", allow everything).
func Allows(mg resource.Managed, actions ...xpv2.ManagementAction) bool {
	m, ok := mg.(interface {
		GetManagementPolicies() xpv2.ManagementPolicies
	})
	if !ok || len(m.GetManagementPolicies()) == 0 {
		return true
	}
	for _, p := range m.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || slices.Contains(actions, p) {
			return true
		}
	}
	return false
}

// Servers is what the process knows about the terdut-servers its provider
// configs point at: one client cache (every client comes from it), the
// team-scoped keys, and the readers credentials are read with.
type Servers struct {
	// Kube reads provider config Secrets (through the cache).
	Kube client.Reader
	// Reader reads past the cache: a refused key is re-read from there.
	// Nil in unit tests, where Kube is not a cache.
	Reader client.Reader
	// Clients is the process's one client cache.
	Clients *terdut.Cache
	// TeamKeys keeps the team-scoped keys; nil turns them off.
	TeamKeys *TeamKeys
	// ListMaxAge shares list answers among the MRs of a team (and the
	// teams and users among all) for this long; zero asks every time.
	ListMaxAge time.Duration
}

// Conn resolves cfg's endpoint, CA bundle and key for one reconcile. A
// missing key is not an error here: Instance reports it to the kinds that
// need it.
func (s *Servers) Conn(ctx context.Context, cfg Config) (*Conn, error) {
	o, err := ClientOptions(ctx, s.Kube, cfg)
	if err != nil && !IsCredentialsMissing(err) {
		return nil, err
	}
	c := &Conn{Config: cfg, servers: s, key: o.Token, keyErr: err}
	o.Token = ""
	c.base = o
	return c, nil
}

// A Conn is one provider config's terdut-server as one reconcile sees it.
type Conn struct {
	Config  Config
	servers *Servers
	// base holds the endpoint, timeout and CA bundle: everything but a key.
	base   terdut.Options
	key    terdut.Secret
	keyErr error
	// teamMR finds the Team of the reconciled MR's namespace that holds a
	// team (nil: none may be minted a key); namespace is that namespace.
	teamMR    func(ctx context.Context, teamID int64) (*v1alpha1.Team, error)
	namespace string
}

// ForNamespace makes c the connection of a reconcile of an MR in namespace
// ns, whose Team of a team teamMR finds (nil: none may be minted a key).
func (c *Conn) ForNamespace(ns string, teamMR func(ctx context.Context, teamID int64) (*v1alpha1.Team, error)) {
	c.namespace, c.teamMR = ns, teamMR
}

// Authenticated reports whether the provider config's key is there.
func (c *Conn) Authenticated() bool { return c.keyErr == nil }

// Endpoint is the server's base URL.
func (c *Conn) Endpoint() string { return c.base.Endpoint }

// KeyIs reports whether the provider config's key is k (a config may name
// the very Secret a ServiceAccount writes its own key to).
func (c *Conn) KeyIs(k terdut.Secret) bool {
	return c.keyErr == nil && k != "" && subtle.ConstantTimeCompare([]byte(c.key.Reveal()), []byte(k.Reveal())) == 1
}

// TeamScoped reports whether children use team-scoped keys (the default).
func (c *Conn) TeamScoped() bool {
	ts := c.Config.Spec.TeamScopedCredentials
	return c.servers.TeamKeys != nil && (ts == nil || *ts)
}

// Instance is the client with the provider config's own key. A key the
// server refuses is re-read past the cache once: after a rotation the new
// key is already in the Secret, and the request is retried with it.
func (c *Conn) Instance() (*terdut.Client, error) {
	if c.keyErr != nil {
		return nil, c.keyErr
	}
	o := c.base
	o.Token, o.Refresh = c.key, c.refreshFrom(c.key)
	return c.client(c.Config.ID(), o)
}

// WithKey is the cached client of the same server for another key, kept
// under purpose (e.g. "ServiceAccount/ns/name/own"); an empty key is an
// unauthenticated client. A new key for the same purpose replaces the old
// client, so rotations do not grow the cache.
func (c *Conn) WithKey(purpose string, key terdut.Secret) (*terdut.Client, error) {
	o := c.base
	o.Token = key
	return c.client(c.Config.ID()+"/"+purpose, o)
}

// Team is the client with teamID's scoped key, minted on first need (and
// again after a 401) while the team's Team MR lives (see TeamKey).
func (c *Conn) Team(ctx context.Context, teamID int64) (*terdut.Client, error) {
	instance, err := c.Instance()
	if err != nil {
		return nil, err
	}
	o, err := c.servers.TeamKeys.Options(ctx, c.Config, c.base, instance, teamID, c.mayMint(teamID))
	if err != nil {
		return nil, err
	}
	return c.client(teamOwner(c.Config, teamID), o)
}

// ReasonWaitingForTeam is the Ready=False reason of a child whose team has
// no live Team MR in its namespace to own the team's key.
const ReasonWaitingForTeam xpv2.ConditionReason = "WaitingForTeam"

const (
	errNoTeamMR      = "team %d has no Team in namespace %q that holds it, and no key of it is kept: a team's scoped key belongs to its Team, which revokes it when it goes. Waiting for that Team (managementPolicies [Observe] is enough); or remove this resource's finalizer to leave its object on the server"
	errTeamMRDeleted = "Team %s/%s, which holds team %d, is being deleted and no key of it is kept: no key is minted that it could not revoke. Waiting for it to go"
)

// waitingForTeamError: a team key cannot be minted because no live Team
// MR would own it.
type waitingForTeamError struct{ error }

// mayMint says whether a key of teamID may be minted now: only while a Team
// of the MR's namespace holds the team and is not being deleted (it revokes
// the key when it goes).
func (c *Conn) mayMint(teamID int64) func(context.Context) error {
	return func(ctx context.Context) error {
		if c.teamMR == nil {
			return waitingForTeamError{errors.Errorf(errNoTeamMR, teamID, "")}
		}
		t, err := c.teamMR(ctx, teamID)
		switch {
		case err != nil:
			return err
		case t == nil:
			return waitingForTeamError{errors.Errorf(errNoTeamMR, teamID, c.namespace)}
		case meta.WasDeleted(t):
			return waitingForTeamError{errors.Errorf(errTeamMRDeleted, t.GetNamespace(), t.GetName(), teamID)}
		}
		return nil
	}
}

// TeamKeyState is teamID's scoped key as its Secret says; false when none
// is kept (or team keys are off).
func (c *Conn) TeamKeyState(ctx context.Context, teamID int64) (TeamKeyState, bool, error) {
	if c.servers.TeamKeys == nil || !c.TeamScoped() {
		return TeamKeyState{}, false, nil
	}
	return c.servers.TeamKeys.State(ctx, c.Config, teamID)
}

// RotateTeamKey mints a new key of teamID in place of the kept one and
// revokes the old (request is the rotation request it answers).
func (c *Conn) RotateTeamKey(ctx context.Context, teamID int64, request string) error {
	if c.servers.TeamKeys == nil {
		return nil
	}
	instance, err := c.Instance()
	if err != nil {
		return err
	}
	return c.servers.TeamKeys.Rotate(ctx, c.Config, instance, teamID, request, c.mayMint(teamID))
}

// HoldsTeamKey reports whether a team-scoped key of teamID is still kept.
func (c *Conn) HoldsTeamKey(ctx context.Context, teamID int64) (bool, error) {
	if c.servers.TeamKeys == nil {
		return false, nil
	}
	return c.servers.TeamKeys.Held(ctx, c.Config, teamID)
}

// RevokeTeamKey removes teamID's scoped service account and key Secret and
// forgets its client, when the Team itself goes.
func (c *Conn) RevokeTeamKey(ctx context.Context, teamID int64) error {
	if c.servers.TeamKeys == nil {
		return nil
	}
	instance, err := c.Instance()
	if err != nil {
		return err
	}
	if err := c.servers.TeamKeys.Revoke(ctx, c.Config, instance, teamID); err != nil {
		return err
	}
	c.servers.Clients.Forget(teamOwner(c.Config, teamID))
	return nil
}

func teamOwner(cfg Config, teamID int64) string {
	return cfg.ID() + "/team/" + extclient.FormatID(teamID)
}

func (c *Conn) client(owner string, o terdut.Options) (*terdut.Client, error) {
	o.ListMaxAge = c.servers.ListMaxAge
	cl, err := c.servers.Clients.Get(owner, o)
	return cl, errors.Wrapf(err, errNewClient, c.Config.Kind, c.Config.Name)
}

// refreshFrom re-reads the config's key past the cache when the server
// refuses the current one.
func (c *Conn) refreshFrom(current terdut.Secret) func(context.Context) (terdut.Secret, error) {
	if c.servers.Reader == nil {
		return nil
	}
	return func(ctx context.Context) (terdut.Secret, error) {
		o, err := ClientOptions(ctx, c.servers.Reader, c.Config)
		if err != nil {
			return "", err
		}
		if o.Token == current {
			return "", errors.New(errKeyUnchanged)
		}
		return o.Token, nil
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

type credentialsMissingError struct{ error }

// IsCredentialsMissing reports whether err says the config's key does not
// exist (yet) or is empty.
func IsCredentialsMissing(err error) bool {
	var m credentialsMissingError
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
	if cfg.Namespace != "" && creds.Source != xpv2.CredentialsSourceSecret {
		// NOTE: the CRD refuses it too; a config stored before that rule
		// must not have the provider send its own environment or files
		// (its Kubernetes token) to a tenant's endpoint.
		return terdut.Options{}, errors.Errorf(errSourceNotSecret, cfg.Kind, cfg.Name, creds.Source)
	}
	sel := creds.Selectors("")
	if err := secretNamespace(cfg, sel.SecretRef); err != nil {
		return terdut.Options{}, err
	}
	raw, err := extract(ctx, creds.Source, kube, sel)
	if kerrors.IsNotFound(err) {
		return o, credentialsMissingError{errors.Wrapf(err, errGetCreds, cfg.Kind, cfg.Name)}
	}
	if err != nil {
		return terdut.Options{}, errors.Wrapf(err, errGetCreds, cfg.Kind, cfg.Name)
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return o, credentialsMissingError{errors.Errorf(errEmptyCreds, cfg.Kind, cfg.Name)}
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
	ca := cfg.Spec.CABundleSecretRef.Selector("")
	if ca == nil {
		return o, nil
	}
	if err := secretNamespace(cfg, ca); err != nil {
		return terdut.Options{}, err
	}
	bundle, err := secretcache.SecretKey(ctx, kube, types.NamespacedName{Namespace: ca.Namespace, Name: ca.Name}, ca.Key)
	if err != nil {
		return terdut.Options{}, errors.Wrapf(err, errGetCA, cfg.Kind, cfg.Name)
	}
	o.CABundle = bundle
	return o, nil
}

// extract reads a key from a Secret through any reader (the cache, or the API
// server directly when refreshing), or from the environment or a file.
func extract(ctx context.Context, source xpv2.CredentialsSource, kube client.Reader, sel xpv2.CommonCredentialSelectors) ([]byte, error) {
	if source != xpv2.CredentialsSourceSecret || sel.SecretRef == nil {
		return resource.CommonCredentialExtractor(ctx, source, nil, sel)
	}
	return secretcache.SecretKey(ctx, kube, types.NamespacedName{Namespace: sel.SecretRef.Namespace, Name: sel.SecretRef.Name}, sel.SecretRef.Key)
}
