package discover_test

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/discover"
)

// TestReadOnlyRefusesWrites: a write through discovery's transport is
// refused before it leaves: the server sees no POST.
func TestReadOnlyRefusesWrites(t *testing.T) {
	d, hs, _ := brownfield(t)
	ro := &discover.ReadOnly{}
	c, err := terdut.New(terdut.Options{Endpoint: hs.URL, Token: adminKey, Wrap: ro.Around})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTeam(t.Context(), "sneaky"); !errors.Is(err, discover.ErrWrite) {
		t.Errorf("a POST through the read-only transport: %v, want ErrWrite", err)
	}
	if _, err := c.ListTeams(t.Context()); err != nil {
		t.Errorf("a GET through the read-only transport: %v", err)
	}
	if n := d.Count("POST /api/teams"); n != 0 {
		t.Errorf("the server received %d POST /api/teams", n)
	}
	if got := ro.Sent(); len(got) != 2 || got[0] != "GET 1" || got[1] != "refused POST 1" {
		t.Errorf("sent %v, want [GET 1 refused POST 1]", got)
	}
}

// TestInCluster: an MR holds its object for discovery only if it names the
// same provider config (a ProviderConfig of the same namespace); an MR of
// another server's config holds nothing here; every MR's name is taken.
func TestInCluster(t *testing.T) {
	s := controllertest.Scheme(t)
	mr := func(ns, name, en string, ref xpv2.ProviderConfigReference) *v1alpha1.Team {
		tm := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		meta.SetExternalName(tm, en)
		tm.SetProviderConfigReference(&ref)
		return tm
	}
	other := xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "staging"}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		mr("platform", "web", "7", cpc), mr("qa", "web", "8", other), mr("platform", "new", "", cpc),
	).Build()
	held, taken, err := discover.InCluster(t.Context(), kube, cpc, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[discover.Key{Kind: v1alpha1.TeamKind, ExternalName: "7"}] != "platform/web" {
		t.Errorf("held %v, want only Team 7 by platform/web", held)
	}
	if len(taken) != 3 || !taken["Team/qa/web"] || !taken["Team/platform/new"] {
		t.Errorf("taken %v, want the three Teams' names", taken)
	}
}
