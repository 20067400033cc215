package main

import (
	"testing"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

func TestParse(t *testing.T) {
	if _, err := parse([]string{"--out", "x"}); err == nil {
		t.Error("no --provider-config accepted")
	}
	if _, err := parse([]string{"--provider-config", "default", "--out", "x", "--key-file", "k"}); err == nil {
		t.Error("--key-file without --endpoint accepted")
	}
	if f, err := parse([]string{"--provider-config", "default", "--out", "x"}); err != nil || f.home != "crossplane-system" {
		t.Errorf("defaults: home %q, %v; want crossplane-system, no error", f.home, err)
	}
}

// TestReference: NAME is a ClusterProviderConfig, NAMESPACE/NAME a
// ProviderConfig of that namespace.
func TestReference(t *testing.T) {
	if r, ns := reference("default"); r.Kind != v1alpha1.ClusterProviderConfigKind || r.Name != "default" || ns != "" {
		t.Errorf("default: %v %q", r, ns)
	}
	if r, ns := reference("team-a/terdut"); r.Kind != v1alpha1.ProviderConfigKind || r.Name != "terdut" || ns != "team-a" {
		t.Errorf("team-a/terdut: %v %q", r, ns)
	}
}
