package generic

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// TestNamespacedConfigReadsOnlySecrets (review item 2): a tenant's
// ProviderConfig must not make the provider read its own files or
// environment (its Kubernetes token) and send them to the tenant's endpoint.
func TestNamespacedConfigReadsOnlySecrets(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("provider-own-kubernetes-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROVIDER_OWN_SECRET", "provider-own-env-secret")
	kube := fakeBuilder(t).Build()
	for name, creds := range map[string]v1alpha1.ProviderCredentials{
		"Filesystem":  {Source: xpv2.CredentialsSourceFilesystem, CommonCredentialSelectors: xpv2.CommonCredentialSelectors{Fs: &xpv2.FsSelector{Path: file}}},
		"Environment": {Source: xpv2.CredentialsSourceEnvironment, CommonCredentialSelectors: xpv2.CommonCredentialSelectors{Env: &xpv2.EnvSelector{Name: "PROVIDER_OWN_SECRET"}}},
	} {
		cfg := Config{Kind: v1alpha1.ProviderConfigKind, Name: "evil", Namespace: "tenant-b", Spec: v1alpha1.ProviderConfigSpec{Endpoint: "http://127.0.0.1:1", Credentials: creds}}
		o, err := ClientOptions(t.Context(), kube, cfg)
		if err == nil || o.Token != "" {
			t.Errorf("%s: a namespaced ProviderConfig read a key of length %d (err %v); want a refusal", name, len(o.Token), err)
		}
		if err != nil && strings.Contains(err.Error(), "provider-own") {
			t.Errorf("%s: the refusal carries the secret: %v", name, err)
		}
		// The platform's ClusterProviderConfig may still use them.
		cfg.Kind, cfg.Namespace = v1alpha1.ClusterProviderConfigKind, ""
		if o, err := ClientOptions(t.Context(), kube, cfg); err != nil || o.Token == "" {
			t.Errorf("%s: a ClusterProviderConfig could not read its key: %v", name, err)
		}
	}
}

// TestTeamKeysMintOnlyOnTheTeamsOwnAccount (review item 1): an account of a
// team key's name made by someone else, of another team or of the whole
// server, must not be adopted: the team's children would hold its key.
func TestTeamKeysMintOnlyOnTheTeamsOwnAccount(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	other, _ := instance.CreateTeam(t.Context(), "Other")
	planted, err := instance.CreateServiceAccount(t.Context(), terdut.ServiceAccount{Name: AccountName(team.ID), Scope: terdut.ScopeTeam, TeamID: &other.ID})
	if err != nil {
		t.Fatal(err)
	}
	k := &TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system"}
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: spec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	if _, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID); err == nil {
		t.Error("a team key was handed out from an account of another team")
	}
	for _, a := range double.Snapshot().ServiceAccounts {
		if a.ID == planted.ID && len(a.KeyIDs) != 0 {
			t.Errorf("%d keys minted on the planted account of team %d", len(a.KeyIDs), other.ID)
		}
	}
}

// refusing is an external client whose Create is refused at adopt time.
type refusing struct {
	managed.TypedExternalClient[*v1alpha1.Team]

	owners  Owners
	creates int
}

func (r *refusing) Observe(context.Context, *v1alpha1.Team) (managed.ExternalObservation, error) {
	return managed.ExternalObservation{}, nil
}

func (r *refusing) Create(ctx context.Context, cr *v1alpha1.Team) (managed.ExternalCreation, error) {
	r.creates++
	return managed.ExternalCreation{}, r.owners.Adoptable(cr)(ctx, 6)
}

// TestRefusalAtAdoptTimeStaysOnReady (review item 9): a ResourceNotOwned
// found by Create is what Observe answers for a while after (crossplane-
// runtime would otherwise show Creating), and Create is tried again once
// the hold is over or the spec changed.
func TestRefusalAtAdoptTimeStaysOnReady(t *testing.T) {
	holder := mgTeam("team-a", "holder", "uid-holder", "6", "default", time.Hour)
	cr := mgTeam("team-b", "taker", "uid-taker", "", "default", 0)
	ext := &refusing{owners: owners(t, holder)}
	r := NewRefusals()
	now := time.Now()
	r.now = func() time.Time { return now }
	e := remembered[*v1alpha1.Team](r, ext)
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("Create adopted another MR's team")
	}
	cr.SetConditions(xpv2.Creating()) // what crossplane-runtime does after a failed Create
	if _, err := e.Observe(t.Context(), cr); err == nil {
		t.Error("Observe after a refused Create answered without the refusal")
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason != ReasonResourceNotOwned {
		t.Errorf("Ready after the next Observe = %s, want %s", c.Reason, ReasonResourceNotOwned)
	}
	now = now.Add(RefusalHold)
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Errorf("Observe once the hold is over: %v, want the server asked again", err)
	}
	_, _ = e.Create(t.Context(), cr)
	cr.SetGeneration(2)
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Errorf("Observe after a spec change: %v, want the server asked again", err)
	}
	_, _ = e.Create(t.Context(), cr)
	cr.ObjectMeta.DeletionTimestamp = &metav1.Time{Time: now}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Errorf("Observe of a deleted MR: %v, want it let through to clean up", err)
	}
}
