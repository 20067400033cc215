// Package generic wires every managed-resource kind of the provider: one
// connector (provider config lookup, usage tracking, the consent and
// ownership gates that keep a tenant to its own namespace and team) and one
// setup (watches and indexes, management policies, change logs, metrics,
// rate limiting). A kind supplies only its external client and its
// credential strategy. What the kinds' external clients share is in
// extclient, credentials in credentials, the changes to crossplane-runtime's
// reconciler in adjust, and when reconciles run in schedule.
package generic

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

const (
	errTrackUsage = "cannot track provider config usage"
)

// Deps are what a kind's external client is built from on each Connect.
type Deps struct {
	// Client talks to the MR's terdut-server with the key the kind's
	// Credentials chose.
	Client *terdut.Client
	// Conn is that server: for a kind that needs other keys (a
	// ServiceAccount) or cleans up team keys (a Team).
	Conn *credentials.Conn
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
	Servers     *credentials.Servers
	Record      event.Recorder
	Gates       []Gate[M]
	Credentials credentials.Credentials[M]
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
	cfg, err := credentials.ResolveProviderConfig(ctx, c.Kube, mg)
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
	conn.ForNamespace(mg.GetNamespace(), func(ctx context.Context, teamID int64) (*v1alpha1.Team, error) {
		return c.Owners.OwnTeam(ctx, mg, teamID)
	})
	cl, err := c.Credentials.Client(ctx, conn, mg)
	if err != nil {
		return nil, err
	}
	if cl == nil {
		return untouched[M]{}, nil
	}
	return c.adjusted(c.External(Deps{
		Client: cl, Conn: conn, Kube: c.Kube, Reader: credentials.PastCache(c.Reader, c.Kube), Record: c.Record,
		Adopter: extclient.Adopter{Check: c.Owners.Adoptable(mg), Record: c.Record, Object: mg, Since: mg.GetCreationTimestamp().Time},
		Absence: c.Absence,
	})), nil
}

// adjusted is the kind's external client e with the changes to the
// runtime's behaviour around it, innermost first (see package adjust).
func (c *Connector[M]) adjusted(e managed.TypedExternalClient[M]) managed.TypedExternalClient[M] {
	e = adjust.Counted(c.Checks, c.Kind, e) // provider_terdut_checks_total
	e = adjust.KeepingGenerations(e)        // status.observedGeneration
	e = adjust.FinalizedOnCreate(e)         // no write for the finalizer alone
	return adjust.Remembered(c.Refusals, e) // a Create's refusal stays on Ready
}
