package controllertest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// KeySecret is a Secret ns/name holding token under "token".
func KeySecret(ns, name, token string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"token": []byte(token)}}
}

// PCSpec is a provider config spec for http://127.0.0.1:1 whose key is the
// "token" of Secret ns/name.
func PCSpec(ns, name string) v1alpha1.ProviderConfigSpec {
	return v1alpha1.ProviderConfigSpec{
		Endpoint:       "http://127.0.0.1:1",
		RequestTimeout: &metav1.Duration{Duration: 5 * time.Second},
		Credentials:    v1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: &v1alpha1.SecretKeySelector{Namespace: ns, Name: name, Key: "token"}},
	}
}

// CPCSpec is PCSpec as a ClusterProviderConfig's, admitting allowed[0].
func CPCSpec(ns, name string, allowed ...v1alpha1.AllowedNamespaces) v1alpha1.ClusterProviderConfigSpec {
	c := v1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: PCSpec(ns, name)}
	if len(allowed) > 0 {
		c.AllowedNamespaces = allowed[0]
	}
	return c
}

// TeamUsing is Team team-a/platform using the provider config kind/name.
func TeamUsing(kind, name string) *v1alpha1.Team {
	return &v1alpha1.Team{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "platform", UID: "uid"},
		Spec:       v1alpha1.TeamSpec{ManagedResourceSpec: xpv2.ManagedResourceSpec{ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: kind, Name: name}}},
	}
}
