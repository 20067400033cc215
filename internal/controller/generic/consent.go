package generic

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// ReasonRefNotPermitted is the Ready=False reason of a managed resource whose
// namespace the provider config does not admit.
const ReasonRefNotPermitted xpv2.ConditionReason = "RefNotPermitted"

const (
	errNotPermitted = "%s %q does not admit namespace %q (allowedNamespaces.from: %s, homeNamespace: %q): ask its owner to admit the namespace, or use another provider config"
	errGetNamespace = "cannot get namespace %q to check the consent of %s %q"
	errBadSelector  = "%s %q has an invalid allowedNamespaces.selector"
	errNoSelector   = "%s %q has allowedNamespaces.from: Selector but no selector"
)

type notPermittedError struct{ error }

// IsNotPermitted reports whether err says a provider config refused a
// namespace.
func IsNotPermitted(err error) bool {
	var np notPermittedError
	return errors.As(err, &np)
}

// A Gate admits mg to its provider config's server, or refuses it and sets
// the condition users see. A refusal that IsUntouchable means mg has nothing
// of its own on the server: being deleted, it goes without a request.
type Gate[M resource.ModernManaged] func(ctx context.Context, mg M, cfg credentials.Config) error

// ConsentGate admits an MR whose namespace its provider config admits
// (Permitted); the provider's own namespace is the platform's and always
// admitted. observed is the server ID the MR last observed (nil: none).
func ConsentGate[M resource.ModernManaged](kube client.Reader, providerNamespace string, observed func(M) int64) Gate[M] {
	return func(ctx context.Context, mg M, cfg credentials.Config) error {
		if providerNamespace != "" && mg.GetNamespace() == providerNamespace {
			return nil
		}
		// NOTE: consent is checked on every Connect (and a change of it
		// re-queues the MRs it concerns), so narrowing it revokes at once.
		err := Permitted(ctx, kube, cfg, mg.GetNamespace())
		if !IsNotPermitted(err) {
			return err
		}
		// NOTE: a refused MR being deleted may still clean up what it made
		// or took over while it was admitted: its status says
		// it observed the object its external name names. Any other
		// refused MR (say, one never admitted, with the hand-set external
		// name of an object nobody manages) deletes nothing.
		if meta.WasDeleted(mg) && observedWhilePermitted(mg, observed) {
			return nil
		}
		extclient.Mark(mg, extclient.Unavailable(ReasonRefNotPermitted, err.Error()))
		if meta.WasDeleted(mg) {
			return extclient.Untouchable(err)
		}
		return err
	}
}

// observedWhilePermitted reports whether mg's status shows the object its
// external name names: Observe ran for it, which only an admitted MR gets to.
func observedWhilePermitted[M resource.ModernManaged](mg M, observed func(M) int64) bool {
	id, ok, err := extclient.ExternalID(mg)
	return observed != nil && err == nil && ok && observed(mg) == id
}

// Permitted returns nil when cfg may serve managed resources in namespace ns:
// a ProviderConfig its own namespace only (it is only ever looked up there);
// a ClusterProviderConfig its home namespace and what allowedNamespaces
// admits. It reads the Namespace only for from: Selector.
func Permitted(ctx context.Context, kube client.Reader, cfg credentials.Config, ns string) error {
	c := cfg.Consent
	if c == nil {
		if cfg.Namespace == ns {
			return nil
		}
		return notPermittedError{errors.Errorf(errNotPermitted, cfg.Kind, cfg.Name, ns, "-", cfg.Namespace)}
	}
	if ns == c.HomeNamespace {
		return nil
	}
	from := c.Allowed.From
	switch from {
	case v1alpha1.NamespacesFromAll:
		return nil
	case v1alpha1.NamespacesFromSelector:
		if c.Allowed.Selector == nil {
			return errors.Errorf(errNoSelector, cfg.Kind, cfg.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(c.Allowed.Selector)
		if err != nil {
			return errors.Wrapf(err, errBadSelector, cfg.Kind, cfg.Name)
		}
		n := &corev1.Namespace{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
			return errors.Wrapf(err, errGetNamespace, ns, cfg.Kind, cfg.Name)
		}
		if sel.Matches(labels.Set(n.Labels)) {
			return nil
		}
	case "":
		from = v1alpha1.NamespacesFromNone
	}
	return notPermittedError{errors.Errorf(errNotPermitted, cfg.Kind, cfg.Name, ns, from, c.HomeNamespace)}
}
