package function

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	protection "github.com/crossplane/crossplane/apis/v2/protection/v1beta1"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// Names of the Usages that order a server's and a team's deletion, as the
// pipeline knows them.
const (
	// NameDeploymentInUse and NameServiceInUse keep the server's
	// Deployment and Service until the bootstrap ServiceAccount is gone:
	// its delete removes the instance account on the running server, and
	// only the server's 404 counts as gone.
	NameDeploymentInUse = "deployment-in-use"
	NameServiceInUse    = "service-in-use"
	// NameServerInUse keeps a team's server (its XTerdutServer) while the
	// team exists: deleting the server's claim is refused, with the
	// team's name in the reason, until the team's claim is gone.
	NameServerInUse = "server-in-use"
	// prefixAccountInUse names the Usage by which each of a team's MRs
	// keeps its server's bootstrap ServiceAccount (and so the server)
	// until the MR has deleted its object on the server.
	prefixAccountInUse = "account-in-use-"
)

// requiredServerAccount names the team's server's bootstrap
// ServiceAccount among the required resources.
const requiredServerAccount = "server-account"

// followsBootstrap is whether the composed resource name is composed only
// with the bootstrap ServiceAccount: a Usage needs its user to exist.
func followsBootstrap(name string) bool {
	return name == NameServiceAccount || name == NameDeploymentInUse || name == NameServiceInUse
}

// serverUsages order a server's deletion: the Deployment and the
// Service its endpoint names stay until the bootstrap ServiceAccount has
// removed its account from the server. They live beside the
// ServiceAccount (a Usage's user is in its own namespace) and name the
// claim's namespace for what they hold. Crossplane replays the deletion
// it refused once the ServiceAccount is gone.
func serverUsages(n ServerNames) []Composed {
	by := &protection.Resource{
		APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ServiceAccountKind,
		ResourceRef: &protection.ResourceRef{Name: n.ServiceAccount()},
	}
	usage := func(name, suffix, apiVersion, kind string) Composed {
		return Composed{Name: name, Object: &protection.Usage{
			TypeMeta:   metav1.TypeMeta{APIVersion: protection.SchemeGroupVersion.String(), Kind: protection.UsageKind},
			ObjectMeta: metav1.ObjectMeta{Namespace: n.ProviderNamespace, Name: n.ServiceAccount() + suffix},
			Spec: protection.UsageSpec{
				Of: protection.NamespacedResource{
					APIVersion: apiVersion, Kind: kind,
					ResourceRef: &protection.NamespacedResourceRef{Name: n.Name, Namespace: new(n.Namespace)},
				},
				By:             by.DeepCopy(),
				ReplayDeletion: new(true),
			},
		}}
	}
	return []Composed{
		usage(NameDeploymentInUse, "-uses-deployment", "apps/v1", "Deployment"),
		usage(NameServiceInUse, "-uses-service", "v1", "Service"),
	}
}

// ServerInUseName is the ClusterUsage by which the team claimed as
// namespace/name holds its server.
func ServerInUseName(n TeamNames) string { return "terdutteam." + n.Namespace + "." + n.Name }

// serverInUse holds the team's server, the XTerdutServer named server,
// while the team's composite (named team) exists: deleting the server's
// claim is refused, and says which team holds it.
func serverInUse(n TeamNames, team, server string) Composed {
	return Composed{Name: NameServerInUse, Object: &protection.ClusterUsage{
		TypeMeta:   metav1.TypeMeta{APIVersion: protection.SchemeGroupVersion.String(), Kind: protection.ClusterUsageKind},
		ObjectMeta: metav1.ObjectMeta{Name: ServerInUseName(n)},
		Spec: protection.ClusterUsageSpec{
			Of: protection.Resource{
				APIVersion: platform.SchemeGroupVersion.String(), Kind: platform.XTerdutServerKind,
				ResourceRef: &protection.ResourceRef{Name: server},
			},
			By: &protection.Resource{
				APIVersion: platform.SchemeGroupVersion.String(), Kind: platform.XTerdutTeamKind,
				ResourceRef: &protection.ResourceRef{Name: team},
			},
			ReplayDeletion: new(true),
		},
	}}
}

// composedBy is the composite of the given kind that composed o (its
// controller reference), or "".
func composedBy(o metav1.Object, kind string) string {
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == kind && ptr.Deref(r.Controller, false) {
			return r.Name
		}
	}
	return ""
}

// accountInUse: each of a team's MRs keeps its server's bootstrap
// ServiceAccount account (in namespace accountNS) until the MR is gone, and
// so, through the server's own Usages, the server's Deployment and
// Service: an MR's delete needs the running server, and only its 404
// counts as gone. The team's composite goes at once when its claim is
// deleted; these hold the server until the team is gone from it.
func accountInUse(n TeamNames, team []Composed, accountNS, account string) []Composed {
	out := make([]Composed, 0, len(team))
	for _, c := range team {
		gvk := c.Object.GetObjectKind().GroupVersionKind()
		out = append(out, Composed{Name: prefixAccountInUse + c.Name, Object: &protection.Usage{
			TypeMeta: metav1.TypeMeta{APIVersion: protection.SchemeGroupVersion.String(), Kind: protection.UsageKind},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: n.Namespace,
				Name:      strings.ToLower(gvk.Kind) + "." + c.Object.GetName() + "-uses-server",
			},
			Spec: protection.UsageSpec{
				Of: protection.NamespacedResource{
					APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ServiceAccountKind,
					ResourceRef: &protection.NamespacedResourceRef{Name: account, Namespace: new(accountNS)},
				},
				By: &protection.Resource{
					APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
					ResourceRef: &protection.ResourceRef{Name: c.Object.GetName()},
				},
				ReplayDeletion: new(true),
			},
		}})
	}
	return out
}
