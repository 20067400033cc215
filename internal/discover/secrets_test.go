package discover_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/discover"
)

// TestConnectionSecretNamesAreFree: no discovered MR names a connection
// Secret that exists (another MR's, one kept by hand, one left over) or that
// another MR names: crossplane-runtime publishes on every observe, and would
// refuse it (the MR never Ready) or take it over (deleting the import would
// delete it).
func TestConnectionSecretNamesAreFree(t *testing.T) {
	_, hs, _ := brownfield(t)
	s := controllertest.Scheme(t)
	other := xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "staging"}
	pager := &v1alpha1.Integration{ObjectMeta: metav1.ObjectMeta{Namespace: "payments-0", Name: "pager", UID: "pager-uid"}}
	pager.SetProviderConfigReference(&other)
	pager.SetWriteConnectionSecretToReference(&xpv2.LocalSecretReference{Name: "am-prod-webhook"})
	isTrue := true
	pagerSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "payments-0", Name: "am-prod-webhook",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Integration", Name: "pager", UID: "pager-uid", Controller: &isTrue}},
		},
		Type: "connection.crossplane.io/v1alpha1", Data: map[string][]byte{"url": []byte("u"), "key": []byte("k")},
	}
	handMade := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "payments-0", Name: "grafana-webhook"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"key": []byte("the key shown once, kept by hand")},
	}
	leftOver := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "payments-0", Name: "ci-webhook"}, Type: "connection.crossplane.io/v1alpha1",
		Data: map[string][]byte{"key": []byte("k")},
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(pager, pagerSecret, handMade, leftOver).Build()

	held, taken, err := discover.InCluster(t.Context(), kube, cpc, "")
	must(t, err)
	r, err := discover.Discover(t.Context(), client(t, hs.URL), discover.Options{ProviderConfig: cpc, HomeNamespace: "crossplane-system", Held: held, Taken: taken})
	must(t, err)
	pub := managed.NewAPILocalSecretPublisher(kube, s)
	for _, f := range r.Files {
		mr := parse(t, f)
		ref := mr.Spec.WriteConnectionSecretToRef
		if mr.Kind != v1alpha1.IntegrationKind || mr.Metadata.Namespace != "payments-0" || ref == nil {
			continue
		}
		if ref.Name != "am-prod-webhook" && ref.Name != "grafana-webhook" && ref.Name != "ci-webhook" {
			continue
		}
		in := &v1alpha1.Integration{ObjectMeta: metav1.ObjectMeta{Namespace: mr.Metadata.Namespace, Name: mr.Metadata.Name, UID: types.UID("discovered-" + mr.Metadata.Name)}}
		in.SetWriteConnectionSecretToReference(&xpv2.LocalSecretReference{Name: ref.Name})
		// NOTE: an observe-only import publishes what Observe returned: nothing.
		_, perr := pub.PublishConnection(context.Background(), in, nil)
		if perr == nil {
			got := &corev1.Secret{}
			must(t, kube.Get(context.Background(), types.NamespacedName{Namespace: "payments-0", Name: ref.Name}, got))
			c := metav1.GetControllerOf(got)
			t.Errorf("%s: existing uncontrolled Secret %q taken over by the import: controller %v, data keys %d", f.Path, ref.Name, c, len(got.Data))
			continue
		}
		t.Errorf("%s: Integration %s/%s names connection Secret %q, which already exists in the cluster; publishing while it only observes: %v",
			f.Path, mr.Metadata.Namespace, mr.Metadata.Name, ref.Name, perr)
	}
}

type stub struct {
	teams    []terdut.Team
	accounts []terdut.ServiceAccount
}

func (s stub) ListTeams(context.Context) ([]terdut.Team, error) { return s.teams, nil }
func (s stub) ListUsers(context.Context) ([]terdut.User, error) { return nil, nil }
func (s stub) ListServiceAccounts(context.Context) ([]terdut.ServiceAccount, error) {
	return s.accounts, nil
}

func (s stub) GetEscalationPolicy(context.Context, int64) (*terdut.EscalationPolicy, error) {
	return nil, nil
}

func (s stub) ListDeadmanSwitches(context.Context, int64) ([]terdut.DeadmanSwitch, error) {
	return nil, nil
}

func (s stub) ListIntegrations(context.Context, int64) ([]terdut.Integration, error) {
	return nil, nil
}

// TestATeamAccountWithoutATeamIsSkipped: a team-scoped account the server
// names no team of has no namespace to go to: skipped, never written with
// none.
func TestATeamAccountWithoutATeamIsSkipped(t *testing.T) {
	srv := stub{teams: []terdut.Team{{ID: 1, Name: "a"}}, accounts: []terdut.ServiceAccount{{ID: 9, Name: "orphan-bot", Scope: terdut.ScopeTeam}}}
	r, err := discover.Discover(t.Context(), srv, discover.Options{ProviderConfig: cpc, Namespace: func(terdut.Team, string) string { return "team-a" }})
	must(t, err)
	for _, f := range r.Files {
		if mr := parse(t, f); mr.Metadata.Namespace == "" || strings.HasPrefix(f.Path, "_instance/") {
			t.Errorf("%s: %s %q written with namespace %q", f.Path, mr.Kind, mr.Metadata.Name, mr.Metadata.Namespace)
		}
	}
}
