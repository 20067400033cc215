package generic

import (
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func TestTeamKeys(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	other, _ := instance.CreateTeam(t.Context(), "Other")
	kube := fake.NewClientBuilder().WithScheme(scheme(t)).Build()
	k := &TeamKeys{Kube: kube, Namespace: "crossplane-system"}
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: spec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	base := terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"}

	o, err := k.Options(t.Context(), cfg, base, instance, team.ID)
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	if o.Token == "" || o.Token == "tdk_instance" {
		t.Fatal("a child would use the instance key")
	}
	s := &corev1.Secret{}
	if err := kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: SecretName(cfg, team.ID)}, s); err != nil {
		t.Fatalf("team key Secret in the provider namespace: %v", err)
	}
	if s.Labels[LabelTeamID] != FormatID(team.ID) || s.Labels[LabelManagedBy] != ManagedBy {
		t.Errorf("team key Secret labels = %v", s.Labels)
	}

	tc, _ := terdut.New(o)
	if _, err := tc.ListIntegrations(t.Context(), team.ID); err != nil {
		t.Errorf("the team key on its own team: %v", err)
	}
	if _, err := tc.ListIntegrations(t.Context(), other.ID); !terdut.IsForbidden(err) {
		t.Errorf("the team key on another team: %v, want 403", err)
	}

	posts := double.Count("POST /api/service-accounts/{id}/keys")
	if _, err := k.Options(t.Context(), cfg, base, instance, team.ID); err != nil || double.Count("POST /api/service-accounts/{id}/keys") != posts {
		t.Errorf("a second Options minted again (%v); want the kept key reused", err)
	}

	// The key is revoked behind the provider's back: the next request
	// answers 401, the key is re-minted once and the request succeeds.
	acct := double.Snapshot().ServiceAccounts[0]
	_ = instance.RevokeKey(t.Context(), acct.ID, acct.KeyIDs[0])
	if _, err := tc.ListIntegrations(t.Context(), team.ID); err != nil {
		t.Errorf("after a revoked team key: %v, want a re-minted key to work", err)
	}
	// A second revocation within a minute is not re-minted in a loop.
	acct = double.Snapshot().ServiceAccounts[0]
	_ = instance.RevokeKey(t.Context(), acct.ID, acct.KeyIDs[0])
	if _, err := tc.ListIntegrations(t.Context(), team.ID); err == nil {
		t.Error("a second revoked key within a minute was re-minted again")
	}

	if err := k.Revoke(t.Context(), cfg, instance, team.ID); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if n := len(double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("%d service accounts after Revoke, want 0", n)
	}
	if err := kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: SecretName(cfg, team.ID)}, s); err == nil {
		t.Error("the team key Secret survived Revoke")
	}
}
