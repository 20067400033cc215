package generic

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
)

type tracked struct{ n int }

func (tr *tracked) Track(context.Context, resource.ModernManaged) error { tr.n++; return nil }

func TestConnectReusesClient(t *testing.T) {
	kube := fakeBuilder(t).WithObjects(
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds", v1alpha1.AllowedNamespaces{From: "All"})},
		controllertest.KeySecret("crossplane-system", "creds", "tdk_instance"),
	).Build()
	clients := make([]*terdut.Client, 0, 3)
	tr := &tracked{}
	c := newTestConnector(kube, teams, "Team", credentials.InstanceKey[*v1alpha1.Team]())
	c.Usage = tr
	for range 3 {
		if _, err := c.Connect(t.Context(), controllertest.TeamUsing("ClusterProviderConfig", "default")); err != nil {
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
	cpc := func(from string) credentials.Config {
		return credentials.Config{Kind: "ClusterProviderConfig", Name: "shared", Consent: &credentials.Consent{HomeNamespace: "platform-oncall", Allowed: v1alpha1.AllowedNamespaces{From: from, Selector: sel}}}
	}
	cases := map[string]struct {
		reason string
		cfg    credentials.Config
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
		"ProviderConfigOwnNS":  {reason: "A ProviderConfig serves its own namespace.", cfg: credentials.Config{Kind: "ProviderConfig", Name: "p", Namespace: "team-c"}, ns: "team-c", ok: true},
		"ProviderConfigOthers": {reason: "A ProviderConfig serves no other namespace.", cfg: credentials.Config{Kind: "ProviderConfig", Name: "p", Namespace: "team-c"}, ns: "team-b"},
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
		&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds")},
		controllertest.KeySecret("crossplane-system", "creds", "tdk_instance"),
	).Build()
	c := newTestConnector(kube, teams, "Team", credentials.InstanceKey[*v1alpha1.Team]())
	mg := controllertest.TeamUsing("ClusterProviderConfig", "default")
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
	cfg := credentials.Config{Kind: "ClusterProviderConfig", Name: "shared", Consent: &credentials.Consent{HomeNamespace: "platform", Allowed: v1alpha1.AllowedNamespaces{From: "Selector", Selector: bad}}}
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
				&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds")},
				controllertest.KeySecret("crossplane-system", "creds", "tdk_instance"),
			).Build()
			c := newTestConnector(kube, teams, "Team", credentials.InstanceKey[*v1alpha1.Team]())
			c.Gates[0] = ConsentGate(kube, "crossplane-system", func(t *v1alpha1.Team) int64 { return t.Status.AtProvider.ID })
			mg := controllertest.TeamUsing("ClusterProviderConfig", "default")
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
