package generic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

func keySecret(ns, name, token string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"token": []byte(token)}}
}

func spec(ns, name string) v1alpha1.ProviderConfigSpec {
	return v1alpha1.ProviderConfigSpec{
		Endpoint:       "http://127.0.0.1:1",
		RequestTimeout: &metav1.Duration{Duration: 5 * time.Second},
		Credentials:    v1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: &v1alpha1.SecretKeySelector{Namespace: ns, Name: name, Key: "token"}},
	}
}

func cspec(ns, name string, allowed ...v1alpha1.AllowedNamespaces) v1alpha1.ClusterProviderConfigSpec {
	c := v1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: spec(ns, name)}
	if len(allowed) > 0 {
		c.AllowedNamespaces = allowed[0]
	}
	return c
}

func teamUsing(kind, name string) *v1alpha1.Team {
	return &v1alpha1.Team{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "platform", UID: "uid"},
		Spec:       v1alpha1.TeamSpec{ManagedResourceSpec: xpv2.ManagedResourceSpec{ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: kind, Name: name}}},
	}
}

type tracked struct{ n int }

func (tr *tracked) Track(context.Context, resource.ModernManaged) error { tr.n++; return nil }

func TestConnect(t *testing.T) {
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: cspec("crossplane-system", "creds")}
	pcLocal := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "own"}, Spec: spec("", "creds")}
	pcForeign := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "foreign"}, Spec: spec("crossplane-system", "creds")}
	cpcNoNS := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "nons"}, Spec: cspec("", "creds")}
	objs := []client.Object{
		cpc, pcLocal, pcForeign, cpcNoNS,
		keySecret("crossplane-system", "creds", " tdk_instance\n"),
		keySecret("team-a", "creds", "tdk_team_a"),
	}

	cases := map[string]struct {
		reason string
		mg     *v1alpha1.Team
		extra  []client.Object
		want   terdut.Options
		err    error
	}{
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig's Secret is read, whitespace trimmed, with its endpoint and timeout.",
			mg:     teamUsing("ClusterProviderConfig", "default"),
			want:   terdut.Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_instance", Timeout: 5 * time.Second},
		},
		"NamespacedProviderConfig": {
			reason: "A namespaced ProviderConfig's Secret defaults to its own namespace.",
			mg:     teamUsing("ProviderConfig", "own"),
			want:   terdut.Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_team_a", Timeout: 5 * time.Second},
		},
		"ProviderConfigCannotReachOut": {
			reason: "A namespaced ProviderConfig may not read a Secret in another namespace (e.g. the instance key).",
			mg:     teamUsing("ProviderConfig", "foreign"),
			err:    errors.Errorf(errForeignSecret, "ProviderConfig", "foreign", "team-a", "crossplane-system"),
		},
		"ClusterProviderConfigNeedsNamespace": {
			reason: "A ClusterProviderConfig's Secret selector must name a namespace.",
			mg:     teamUsing("ClusterProviderConfig", "nons"),
			err:    errors.Errorf(errMissingSecretNS, "ClusterProviderConfig", "nons"),
		},
		"WrongKind": {
			reason: "Only our two provider config kinds are accepted.",
			mg:     teamUsing("StoreConfig", "default"),
			err:    errors.New(errPCKind),
		},
		"EmptyKey": {
			reason: "An empty key is a clear error, not an unauthenticated client.",
			mg:     teamUsing("ClusterProviderConfig", "empty"),
			extra: []client.Object{
				&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: cspec("crossplane-system", "blank")},
				keySecret("crossplane-system", "blank", "  \n"),
			},
			// The options still say where the server is, and how to trust
			// it: a bootstrapping ServiceAccount goes on without a key.
			want: terdut.Options{Endpoint: "http://127.0.0.1:1", Timeout: 5 * time.Second},
			err:  credentialsMissingError{errors.Errorf(errEmptyCreds, "ClusterProviderConfig", "empty")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fakeBuilder(t).WithObjects(append(objs, tc.extra...)...).Build()
			cfg, err := ResolveProviderConfig(t.Context(), kube, tc.mg)
			var got terdut.Options
			if err == nil {
				got, err = ClientOptions(t.Context(), kube, cfg)
			}
			if diff := cmp.Diff(tc.err, err, test.EquateErrors()); diff != "" {
				t.Fatalf("\n%s\n-want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nclient options -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConnectReusesClient(t *testing.T) {
	kube := fakeBuilder(t).WithObjects(
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: cspec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})},
		keySecret("crossplane-system", "creds", "tdk_instance"),
	).Build()
	clients := make([]*terdut.Client, 0, 3)
	tr := &tracked{}
	c := newTestConnector(kube, teams, "Team", InstanceKey[*v1alpha1.Team]())
	c.Usage = tr
	for range 3 {
		if _, err := c.Connect(t.Context(), teamUsing("ClusterProviderConfig", "default")); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c.got.Client)
	}
	if tr.n != 3 || clients[0] != clients[1] || clients[1] != clients[2] {
		t.Errorf("3 connects: tracked %d, same client %v; want usage tracked each time and one client reused", tr.n, clients[0] == clients[2])
	}
}

func TestPermitted(t *testing.T) {
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"terdut.ryuvia.com/allowed": "true"}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}}
	kube := fakeBuilder(t).WithObjects(labelled, plain).Build()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"terdut.ryuvia.com/allowed": "true"}}
	cpc := func(from string) Config {
		return Config{Kind: "ClusterProviderConfig", Name: "shared", Consent: &Consent{HomeNamespace: "platform-oncall", Allowed: v1alpha1.AllowedNamespaces{From: from, Selector: sel}}}
	}
	cases := map[string]struct {
		reason string
		cfg    Config
		ns     string
		ok     bool
	}{
		"HomeAlways":           {reason: "The home namespace is always admitted.", cfg: cpc("None"), ns: "platform-oncall", ok: true},
		"NoneRefuses":          {reason: "from: None admits no other namespace.", cfg: cpc("None"), ns: "team-b"},
		"DefaultIsNone":        {reason: "No from at all is None.", cfg: cpc(""), ns: "team-b"},
		"SameRefuses":          {reason: "from: Same is the home namespace only.", cfg: cpc("Same"), ns: "team-b"},
		"AllAdmits":            {reason: "from: All admits every namespace.", cfg: cpc("All"), ns: "team-c", ok: true},
		"SelectorLabelled":     {reason: "from: Selector admits a namespace with the label.", cfg: cpc("Selector"), ns: "team-b", ok: true},
		"SelectorUnlabelled":   {reason: "from: Selector refuses a namespace without it.", cfg: cpc("Selector"), ns: "team-c"},
		"ProviderConfigOwnNS":  {reason: "A ProviderConfig serves its own namespace.", cfg: Config{Kind: "ProviderConfig", Name: "p", Namespace: "team-c"}, ns: "team-c", ok: true},
		"ProviderConfigOthers": {reason: "A ProviderConfig serves no other namespace.", cfg: Config{Kind: "ProviderConfig", Name: "p", Namespace: "team-c"}, ns: "team-b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Permitted(t.Context(), kube, tc.cfg, tc.ns)
			if (err == nil) != tc.ok || (err != nil && !IsNotPermitted(err)) {
				t.Errorf("\n%s\nPermitted(%s) = %v, want permitted %v", tc.reason, tc.ns, err, tc.ok)
			}
		})
	}
}

func TestConnectRefusedSetsRefNotPermitted(t *testing.T) {
	kube := fakeBuilder(t).WithObjects(
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: cspec("crossplane-system", "creds")},
		keySecret("crossplane-system", "creds", "tdk_instance"),
	).Build()
	c := newTestConnector(kube, teams, "Team", InstanceKey[*v1alpha1.Team]())
	mg := teamUsing("ClusterProviderConfig", "default")
	if _, err := c.Connect(t.Context(), mg); !IsNotPermitted(err) {
		t.Fatalf("Connect from a namespace the config does not admit: %v, want refused", err)
	}
	if r := mg.GetCondition(xpv2.TypeReady).Reason; r != ReasonRefNotPermitted {
		t.Errorf("Ready reason %q, want %q", r, ReasonRefNotPermitted)
	}
	now := metav1.Now()
	mg.SetDeletionTimestamp(&now)
	if _, err := c.Connect(t.Context(), mg); err != nil {
		t.Errorf("Connect of a refused MR being deleted: %v, want allowed to clean up", err)
	}
}

// TestPermittedSaysWhyASelectorIsInvalid: a selector that does not parse is
// refused with the parser's reason, not a bare "invalid".
func TestPermittedSaysWhyASelectorIsInvalid(t *testing.T) {
	kube := fakeBuilder(t).Build()
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near", Values: []string{"x"}}}}
	cfg := Config{Kind: "ClusterProviderConfig", Name: "shared", Consent: &Consent{HomeNamespace: "platform", Allowed: v1alpha1.AllowedNamespaces{From: "Selector", Selector: bad}}}
	err := Permitted(t.Context(), kube, cfg, "team-b")
	if err == nil || !strings.Contains(err.Error(), `"Near"`) {
		t.Errorf("Permitted with operator Near: %v, want the parser's reason naming it", err)
	}
	cfg.Consent.Allowed.Selector = nil
	if err := Permitted(t.Context(), kube, cfg, "team-b"); err == nil || !strings.Contains(err.Error(), "no selector") {
		t.Errorf("Permitted with from: Selector and no selector: %v, want it said", err)
	}
}

// TestDeletingARefusedMR: deleting an MR whose namespace is not (or no
// longer) admitted may clean up only what it observed while it was admitted.
// One never admitted, with the hand-set external name of an object nobody
// manages, must delete nothing: that would be a tenancy escape.
func TestDeletingARefusedMR(t *testing.T) {
	cases := map[string]struct {
		reason   string
		observed int64
		cleansUp bool
	}{
		"NeverAdmitted": {reason: "Status never showed object 42: it was never observed while admitted; the finalizer goes, nothing is touched.", observed: 0},
		"ObservedOther": {reason: "Status shows another object: the external name was changed since; nothing is touched.", observed: 7},
		"Revoked":       {reason: "Status shows object 42: observed while admitted, consent revoked since; it cleans up.", observed: 42, cleansUp: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fakeBuilder(t).WithObjects(
				&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: cspec("crossplane-system", "creds")},
				keySecret("crossplane-system", "creds", "tdk_instance"),
			).Build()
			c := newTestConnector(kube, teams, "Team", InstanceKey[*v1alpha1.Team]())
			c.Gates[0] = ConsentGate(kube, "crossplane-system", func(t *v1alpha1.Team) int64 { return t.Status.AtProvider.ID })
			mg := teamUsing("ClusterProviderConfig", "default")
			meta.SetExternalName(mg, "42")
			mg.Status.AtProvider.ID = tc.observed
			now := metav1.Now()
			mg.SetDeletionTimestamp(&now)
			ext, err := c.Connect(t.Context(), mg)
			if err != nil {
				t.Fatalf("\n%s\nConnect: %v", tc.reason, err)
			}
			_, untouchedClient := ext.(untouched[*v1alpha1.Team])
			if cleansUp := !untouchedClient && c.got.Client != nil; cleansUp != tc.cleansUp {
				t.Errorf("\n%s\nConnect built a client that may delete: %v, want %v", tc.reason, cleansUp, tc.cleansUp)
			}
		})
	}
}

// A namespaced ProviderConfig may leave its secretRef's namespace out: it is
// the config's own, the only one it may read from.
func TestANamespacedConfigsSecretIsItsOwnByDefault(t *testing.T) {
	kube := fakeBuilder(t).WithObjects(keySecret("team-a", "creds", "tdk_team_a"), keySecret("crossplane-system", "creds", "tdk_instance")).Build()
	sp := spec("", "creds")
	sp.Endpoint = "http://127.0.0.1:1"
	cfg := Config{Kind: v1alpha1.ProviderConfigKind, Name: "own", Namespace: "team-a", Spec: sp}
	o, err := ClientOptions(t.Context(), kube, cfg)
	if err != nil || o.Token != "tdk_team_a" {
		t.Errorf("ClientOptions of a namespaced config without secretRef.namespace = token %t, %v; want team-a's key", o.Token == "tdk_team_a", err)
	}
}
