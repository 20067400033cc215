package credentials

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func TestTeamKeys(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	other, _ := instance.CreateTeam(t.Context(), "Other")
	kube := fakeBuilder(t).Build()
	k := &TeamKeys{Kube: kube, Namespace: "crossplane-system"}
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	base := terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"}

	o, err := k.Options(t.Context(), cfg, base, instance, team.ID, mayMint)
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
	if s.Labels[LabelTeamID] != extclient.FormatID(team.ID) || s.Labels[secretcache.LabelManagedBy] != secretcache.ManagedBy {
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
	if _, err := k.Options(t.Context(), cfg, base, instance, team.ID, mayMint); err != nil || double.Count("POST /api/service-accounts/{id}/keys") != posts {
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

// laggingKeys is a server with one team, and a store of Secrets whose cache
// never catches up (every read of it misses), for a team key's minting.
type laggingKeys struct {
	double   *terdutdouble.Server
	instance *terdut.Client
	team     *terdut.Team
	store    client.WithWatch
	cache    client.WithWatch
	cfg      Config
	base     terdut.Options
}

func newLaggingKeys(t *testing.T) laggingKeys {
	t.Helper()
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	t.Cleanup(hs.Close)
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	store := fakeBuilder(t).Build()
	cache := interceptor.NewClient(store, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return kerrors.NewNotFound(corev1.Resource("secrets"), key.Name)
		},
	})
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	return laggingKeys{
		double: double, instance: instance, team: team, store: store, cache: cache, cfg: cfg,
		base: terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"},
	}
}

// TestTeamKeysMintOnceWhileCacheLags: children of one team connect at once
// while the cache has not seen the team's key Secret yet: one key is minted,
// all of them use it.
func TestTeamKeysMintOnceWhileCacheLags(t *testing.T) {
	f := newLaggingKeys(t)
	double, instance, team, cfg, base := f.double, f.instance, f.team, f.cfg, f.base
	k := &TeamKeys{Kube: f.cache, Reader: f.store, Namespace: "crossplane-system"}

	const children = 4
	toks := make(chan terdut.Secret, children)
	errs := make(chan error, children)
	var wg sync.WaitGroup
	for range children {
		wg.Go(func() {
			o, err := k.Options(t.Context(), cfg, base, instance, team.ID, mayMint)
			toks <- o.Token
			errs <- err
		})
	}
	wg.Wait()
	close(toks)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a child could not connect: %v", err)
		}
	}
	seen := map[terdut.Secret]bool{}
	for tok := range toks {
		seen[tok] = true
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys"); n != 1 || len(seen) != 1 {
		t.Errorf("%d keys minted, %d distinct keys handed out to %d children; want 1 and 1", n, len(seen), children)
	}
}

// TestRemintRevokesTheReplacedKey: a team key answered with 401 is re-minted.
// The key it replaces must not stay valid on the server: a key nobody
// holds any more is one more key that could leak.
func TestRemintRevokesTheReplacedKey(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	kube := fakeBuilder(t).Build()
	k := &TeamKeys{Kube: kube, Namespace: "crossplane-system"}
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	o, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	first := o.Token
	// One 401 (a server hiccup, say): the client asks for a new key.
	double.AddFault(terdutdouble.Fault{Method: "GET", Route: "/api/teams/{id}/integrations", Status: 401, Times: 1})
	tc, _ := terdut.New(o)
	if _, err := tc.ListIntegrations(t.Context(), team.ID); err != nil {
		t.Fatalf("after a 401: %v, want a re-minted key to work", err)
	}
	old, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: first, MaxRetries: -1})
	if _, err := old.ListIntegrations(t.Context(), team.ID); !terdut.IsUnauthorized(err) {
		t.Errorf("the replaced key still works (%v): it was not revoked", err)
	}
	if n := len(double.Snapshot().ServiceAccounts[0].KeyIDs); n != 1 {
		t.Errorf("the team's account holds %d keys, want 1", n)
	}
}

// TestTeamKeysReadPastTheCacheOnce: the first child of a team with no key
// yet reads the API server once before it mints (under the team's lock),
// not once more beforehand; a child that comes while the cache lags takes
// the key written a moment ago without a read, and after freshFor finds it
// past the cache; neither mints one.
func TestTeamKeysReadPastTheCacheOnce(t *testing.T) {
	f := newLaggingKeys(t)
	double, instance, team, cfg, base := f.double, f.instance, f.team, f.cfg, f.base
	direct := 0
	api := interceptor.NewClient(f.store, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			direct++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	k := &TeamKeys{Kube: secretcache.SecretsPastTheCache(f.cache, api), Reader: api, Namespace: "crossplane-system"}

	first, err := k.Options(t.Context(), cfg, base, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	if direct != 1 {
		t.Errorf("the first child read the API server %d times before it minted, want 1", direct)
	}
	second, err := k.Options(t.Context(), cfg, base, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys"); n != 1 || first.Token != second.Token || direct != 1 {
		t.Errorf("%d keys minted, the same key to both children: %t, %d reads of the API server; want 1, true, 1 (the key written a moment ago)", n, first.Token == second.Token, direct)
	}
	// Once the key is no longer fresh, a child the lagging cache does not
	// show it to reads the Secret past the cache again, and mints none.
	name := SecretName(cfg, team.ID)
	k.written[name] = writtenKey{token: first.Token, at: time.Now().Add(-freshFor)}
	third, err := k.Options(t.Context(), cfg, base, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys"); n != 1 || third.Token != first.Token || direct != 2 {
		t.Errorf("after %s: %d keys minted, the same key: %t, %d reads of the API server; want 1, true, 2", freshFor, n, third.Token == first.Token, direct)
	}
	// Only the last moments' keys are kept in memory.
	k.written["another team"] = writtenKey{token: "tdk_old", at: time.Now().Add(-freshFor)}
	k.wrote(name, first.Token)
	if _, ok := k.written["another team"]; ok {
		t.Errorf("a key written more than %s ago is still kept", freshFor)
	}
	// A revoked team's key is not handed out from memory.
	if err := k.Revoke(t.Context(), cfg, instance, team.ID); err != nil {
		t.Fatal(err)
	}
	if k.fresh(name) != "" {
		t.Error("the revoked team's key is still kept as fresh")
	}
}

// TestNoTeamKeyIsMintedOnceItsTeamGoes: a Team removed without Delete
// revokes its team's key before its finalizer goes; a child's request
// answered 401 meanwhile must not mint the key again (a live key nobody
// would revoke): once mayMint refuses, a 401 stays a 401.
func TestNoTeamKeyIsMintedOnceItsTeamGoes(t *testing.T) {
	double, instance, team, cfg := oneTeam(t)
	k := &TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system"}
	teamLives := true
	may := func(context.Context) error {
		if teamLives {
			return nil
		}
		return waitingForTeamError{kerrors.NewBadRequest("the Team is being deleted")}
	}
	o, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: cfg.Spec.Endpoint}, instance, team.ID, may)
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := terdut.New(o)
	// The Team is deleted with an Orphan policy: its key is revoked.
	teamLives = false
	if err := k.Revoke(t.Context(), cfg, instance, team.ID); err != nil {
		t.Fatal(err)
	}
	mints := double.Count("POST /api/service-accounts/{id}/keys")
	if _, err := tc.ListDeadmanSwitches(t.Context(), team.ID); err == nil {
		t.Error("a child's request with the revoked key succeeded")
	}
	if _, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: cfg.Spec.Endpoint}, instance, team.ID, may); err == nil {
		t.Error("Options minted a new key for a team whose Team is being deleted")
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys") - mints; n != 0 {
		t.Errorf("%d keys minted after the Team's revoke: nobody would revoke them", n)
	}
	if n := len(double.Snapshot().ServiceAccounts); n != 0 {
		t.Errorf("%d team key accounts on the server after the revoke, want 0", n)
	}
}

// TestATeamKeySecretGoesOnlyWhereItWasMinted: a team key Secret is found
// by a name derived from its provider config and endpoint, but a name is
// only a hash: one that records another config or endpoint (a tenant's
// config found to hash to it) is never handed out, overwritten or deleted.
func TestATeamKeySecretGoesOnlyWhereItWasMinted(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	tenant := Config{Kind: "ProviderConfig", Name: "mine", Namespace: "team-b", Spec: controllertest.PCSpec("team-b", "creds")}
	tenant.Spec.Endpoint = hs.URL
	victims := map[string]*corev1.Secret{
		"another config": teamKeySecret(SecretName(tenant, team.ID), "ClusterProviderConfig/platform", hs.URL, "tdk_victims_key"),
		"another server": teamKeySecret(SecretName(tenant, team.ID), tenant.ID(), "https://elsewhere.example", "tdk_victims_key"),
	}
	for name, victim := range victims {
		t.Run(name, func(t *testing.T) {
			kube := fakeBuilder(t).WithObjects(victim.DeepCopy()).Build()
			k := &TeamKeys{Kube: kube, Namespace: "crossplane-system"}
			o, err := k.Options(t.Context(), tenant, terdut.Options{Endpoint: hs.URL}, instance, team.ID, mayMint)
			if err == nil || o.Token == "tdk_victims_key" {
				t.Errorf("Options = token %t, %v; want an error and not the other config's key", o.Token == "tdk_victims_key", err)
			}
			if err := k.Revoke(t.Context(), tenant, instance, team.ID); err == nil {
				t.Error("Revoke of a Secret recorded for another config: no error")
			}
			got := &corev1.Secret{}
			if err := kube.Get(t.Context(), client.ObjectKeyFromObject(victim), got); err != nil || string(got.Data["token"]) != "tdk_victims_key" {
				t.Errorf("the other config's Secret after Options and Revoke: %v, key kept %t; want it untouched", err, err == nil && string(got.Data["token"]) == "tdk_victims_key")
			}
		})
	}
}

// TestALegacyTeamKeyIsCarriedOver: a key kept under the name releases before
// the full-length hash used is moved to the current name (no key minted, the
// old Secret gone) when it records this config and endpoint, and left alone
// when it does not.
func TestALegacyTeamKeyIsCarriedOver(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	for name, tc := range map[string]struct {
		recorded string
		carried  bool
	}{
		"Ours":   {recorded: cfg.ID(), carried: true},
		"Theirs": {recorded: "ClusterProviderConfig/other"},
	} {
		t.Run(name, func(t *testing.T) {
			legacy := teamKeySecret(legacySecretName(cfg, team.ID), tc.recorded, hs.URL, "tdk_kept_before_the_upgrade")
			kube := fakeBuilder(t).WithObjects(legacy).Build()
			k := &TeamKeys{Kube: kube, Namespace: "crossplane-system"}
			mints := double.Count("POST /api/service-accounts/{id}/keys")
			o, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL}, instance, team.ID, mayMint)
			if err != nil {
				t.Fatal(err)
			}
			minted := double.Count("POST /api/service-accounts/{id}/keys") - mints
			oldGone := kerrors.IsNotFound(kube.Get(t.Context(), client.ObjectKeyFromObject(legacy), &corev1.Secret{}))
			if got := o.Token == "tdk_kept_before_the_upgrade"; got != tc.carried || (minted == 0) != tc.carried || oldGone != tc.carried {
				t.Errorf("kept key used %t, %d minted, legacy Secret gone %t; want %t, carried over: %t", got, minted, oldGone, tc.carried, tc.carried)
			}
			cur := &corev1.Secret{}
			if err := kube.Get(t.Context(), types.NamespacedName{Namespace: "crossplane-system", Name: SecretName(cfg, team.ID)}, cur); err != nil || !recordedFor(cur, cfg) {
				t.Errorf("the team's key Secret under its current name: %v", err)
			}
		})
	}
}

// teamKeySecret is a team key Secret of the given name, recorded for config
// configID at endpoint.
func teamKeySecret(name, configID, endpoint, key string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "crossplane-system", Name: name,
			Labels:      map[string]string{secretcache.LabelManagedBy: secretcache.ManagedBy},
			Annotations: map[string]string{AnnotationConfig: configID},
		},
		Data: map[string][]byte{keyToken: []byte(key), keyEndpoint: []byte(endpoint), keyAccountID: []byte("99"), keyKeyID: []byte("98")},
	}
}

// TestAKeyMintedBeforeACrashIsRevoked: the process dies after the server
// made a team key and before its Secret held it (here: the write fails and
// so does the revoke, as a kill would leave it). The next mint finds the
// mark the first left, and no key stays valid that no Secret holds.
func TestAKeyMintedBeforeACrashIsRevoked(t *testing.T) {
	double, instance, team, cfg := oneTeam(t)
	store := fakeBuilder(t).Build()
	writes := 0
	dying := interceptor.NewClient(store, interceptor.Funcs{
		Update: func(_ context.Context, _ client.WithWatch, _ client.Object, _ ...client.UpdateOption) error {
			writes++
			return kerrors.NewServiceUnavailable("killed")
		},
	})
	double.AddFault(terdutdouble.Fault{Method: "DELETE", Route: "/api/service-accounts/{id}/keys/{kid}", Status: 503, Times: 1})
	if _, err := (&TeamKeys{Kube: dying, Namespace: "crossplane-system"}).Options(t.Context(), cfg, terdut.Options{Endpoint: cfg.Spec.Endpoint}, instance, team.ID, mayMint); err == nil || writes != 1 {
		t.Fatalf("the dying mint: %v after %d updates; want it to fail writing its key", err, writes)
	}
	if n := controllertest.ValidKeys(double); n != 1 {
		t.Fatalf("%d valid keys after the dying mint; the test wants the one it left", n)
	}
	o, err := (&TeamKeys{Kube: store, Namespace: "crossplane-system"}).Options(t.Context(), cfg, terdut.Options{Endpoint: cfg.Spec.Endpoint}, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	if n := controllertest.ValidKeys(double); n != 1 {
		t.Errorf("%d valid keys after the next mint, want 1: the one its Secret holds", n)
	}
	if double.Verify(o.Token.Reveal()).Valid != true {
		t.Error("the key in the Secret is not valid")
	}
}

// TestATeamKeyIsRotatedInPlace: Rotate mints a new key, writes it over the
// kept one (recording when, and for which request) and revokes the old; a
// child's client still holding the old key is refused once and takes the
// new one from the Secret, minting nothing.
func TestATeamKeyIsRotatedInPlace(t *testing.T) {
	double, instance, team, cfg := oneTeam(t)
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	k := &TeamKeys{Kube: fakeBuilder(t).Build(), Namespace: "crossplane-system", now: func() time.Time { return now }}
	o, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: cfg.Spec.Endpoint, MaxRetries: -1}, instance, team.ID, mayMint)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := terdut.New(o)
	old := o.Token
	if st, ok, err := k.State(t.Context(), cfg, team.ID); err != nil || !ok || !st.MintedAt.Equal(now) {
		t.Fatalf("State = %+v, %t, %v; want minted at %s", st, ok, err, now)
	}
	now = now.Add(721 * time.Hour)
	k.written = nil // the rotation is seen through the Secret, not this process's memory
	if err := k.Rotate(t.Context(), cfg, instance, team.ID, "2026-12-07", mayMint); err != nil {
		t.Fatal(err)
	}
	st, _, _ := k.State(t.Context(), cfg, team.ID)
	if !st.MintedAt.Equal(now) || st.Request != "2026-12-07" {
		t.Errorf("State after Rotate = %+v, want minted at %s for request 2026-12-07", st, now)
	}
	if double.Verify(old.Reveal()).Valid {
		t.Error("the old key is still valid after the rotation")
	}
	mints := double.Count("POST /api/service-accounts/{id}/keys")
	if _, err := child.ListDeadmanSwitches(t.Context(), team.ID); err != nil {
		t.Errorf("a child holding the old key after the rotation: %v; want it to take the new one", err)
	}
	if n := double.Count("POST /api/service-accounts/{id}/keys") - mints; n != 0 {
		t.Errorf("%d keys minted for a child holding the rotated-out key; want 0 (the Secret holds the new one)", n)
	}
	if n := controllertest.ValidKeys(double); n != 1 {
		t.Errorf("%d valid keys of the team, want 1", n)
	}
}

// oneTeam is a double with one team ("Platform"), a client of it with its
// instance key that does not retry, and a ClusterProviderConfig of it.
func oneTeam(t *testing.T) (*terdutdouble.Server, *terdut.Client, *terdut.Team, Config) {
	t.Helper()
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	t.Cleanup(hs.Close)
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance", MaxRetries: -1})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	return double, instance, team, cfg
}

// A name lookup that misses the team's key account (a list one item short,
// an index behind) is no proof the account is gone: Revoke must not let the
// Team go with the account, and its keys, left valid on the server.
func TestRevokeDoesNotTrustALookupThatMissesTheAccount(t *testing.T) {
	double := terdutdouble.New(terdutdouble.Options{AdminKey: "tdk_instance"})
	hs := httptest.NewServer(double.Handler())
	defer hs.Close()
	instance, _ := terdut.New(terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"})
	team, _ := instance.CreateTeam(t.Context(), "Platform")
	kube := fakeBuilder(t).Build()
	k := &TeamKeys{Kube: kube, Namespace: "crossplane-system"}
	cfg := Config{Kind: "ClusterProviderConfig", Name: "default", Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cfg.Spec.Endpoint = hs.URL
	if _, err := k.Options(t.Context(), cfg, terdut.Options{Endpoint: hs.URL, Token: "tdk_instance"}, instance, team.ID, mayMint); err != nil {
		t.Fatalf("Options: %v", err)
	}
	double.SetQuirks(terdutdouble.Quirks{ShortLists: true})
	err := k.Revoke(t.Context(), cfg, instance, team.ID)
	double.SetQuirks(terdutdouble.Quirks{})
	left := len(double.Snapshot().ServiceAccounts)
	if err == nil && left != 0 {
		t.Fatalf("Revoke succeeded with %d service accounts left on the server: the team's key stays valid", left)
	}
	if err != nil {
		// Refused for now: the next try, with a lookup that tells the
		// truth, deletes it.
		if err := k.Revoke(t.Context(), cfg, instance, team.ID); err != nil || len(double.Snapshot().ServiceAccounts) != 0 {
			t.Fatalf("the retried Revoke: %v, %d accounts left", err, len(double.Snapshot().ServiceAccounts))
		}
	}
}
