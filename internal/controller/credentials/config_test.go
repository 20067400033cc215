package credentials

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

func TestConnect(t *testing.T) {
	cpc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: controllertest.CPCSpec("crossplane-system", "creds")}
	pcLocal := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "own"}, Spec: controllertest.PCSpec("", "creds")}
	pcForeign := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "foreign"}, Spec: controllertest.PCSpec("crossplane-system", "creds")}
	cpcNoNS := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "nons"}, Spec: controllertest.CPCSpec("", "creds")}
	objs := []client.Object{
		cpc, pcLocal, pcForeign, cpcNoNS,
		controllertest.KeySecret("crossplane-system", "creds", " tdk_instance\n"),
		controllertest.KeySecret("team-a", "creds", "tdk_team_a"),
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
			mg:     controllertest.TeamUsing("ClusterProviderConfig", "default"),
			want:   terdut.Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_instance", Timeout: 5 * time.Second},
		},
		"NamespacedProviderConfig": {
			reason: "A namespaced ProviderConfig's Secret defaults to its own namespace.",
			mg:     controllertest.TeamUsing("ProviderConfig", "own"),
			want:   terdut.Options{Endpoint: "http://127.0.0.1:1", Token: "tdk_team_a", Timeout: 5 * time.Second},
		},
		"ProviderConfigCannotReachOut": {
			reason: "A namespaced ProviderConfig may not read a Secret in another namespace (e.g. the instance key).",
			mg:     controllertest.TeamUsing("ProviderConfig", "foreign"),
			err:    errors.Errorf(errForeignSecret, "ProviderConfig", "foreign", "team-a", "crossplane-system"),
		},
		"ClusterProviderConfigNeedsNamespace": {
			reason: "A ClusterProviderConfig's Secret selector must name a namespace.",
			mg:     controllertest.TeamUsing("ClusterProviderConfig", "nons"),
			err:    errors.Errorf(errMissingSecretNS, "ClusterProviderConfig", "nons"),
		},
		"WrongKind": {
			reason: "Only our two provider config kinds are accepted.",
			mg:     controllertest.TeamUsing("StoreConfig", "default"),
			err:    errors.New(errPCKind),
		},
		"EmptyKey": {
			reason: "An empty key is a clear error, not an unauthenticated client.",
			mg:     controllertest.TeamUsing("ClusterProviderConfig", "empty"),
			extra: []client.Object{
				&v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: controllertest.CPCSpec("crossplane-system", "blank")},
				controllertest.KeySecret("crossplane-system", "blank", "  \n"),
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

// A namespaced ProviderConfig may leave its secretRef's namespace out: it is
// the config's own, the only one it may read from.
func TestANamespacedConfigsSecretIsItsOwnByDefault(t *testing.T) {
	kube := fakeBuilder(t).WithObjects(controllertest.KeySecret("team-a", "creds", "tdk_team_a"), controllertest.KeySecret("crossplane-system", "creds", "tdk_instance")).Build()
	sp := controllertest.PCSpec("", "creds")
	sp.Endpoint = "http://127.0.0.1:1"
	cfg := Config{Kind: v1alpha1.ProviderConfigKind, Name: "own", Namespace: "team-a", Spec: sp}
	o, err := ClientOptions(t.Context(), kube, cfg)
	if err != nil || o.Token != "tdk_team_a" {
		t.Errorf("ClientOptions of a namespaced config without secretRef.namespace = token %t, %v; want team-a's key", o.Token == "tdk_team_a", err)
	}
}
