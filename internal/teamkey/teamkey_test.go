package teamkey

import "testing"

// The name is stable: the provider finds the Secrets it wrote before an
// upgrade by it, so a change here would orphan every team key.
func TestSecretName(t *testing.T) {
	cfg, ep := ConfigID("ClusterProviderConfig", "", "platform-oncall.terdut"), "http://terdut.platform-oncall.svc:8080"
	got := SecretName(cfg, ep, 42)
	if want := "terdut-team-" + ConfigHash(cfg, ep) + "-42"; got != want {
		t.Errorf("SecretName = %q, want %q", got, want)
	}
	// Pinned: an accidental change of the hash would orphan every key.
	if want := "terdut-team-5n2qzlwqgmgtb7f6mmvjixaukm7vn3cy4ojetreple5qww23jpgq-42"; got != want || len(ConfigHash(cfg, ep)) != 52 {
		t.Errorf("SecretName = %q, want %q (a 52-character, 256-bit config hash)", got, want)
	}
	if len(got) > 253 || len(ConfigHash(cfg, ep)) > 63 {
		t.Errorf("SecretName %q (%d) or its hash (%d) too long for a Secret name or a label value", got, len(got), len(ConfigHash(cfg, ep)))
	}
	if ConfigID("ProviderConfig", "team-a", "x") != "ProviderConfig/team-a/x" {
		t.Error("a namespaced config's ID carries its namespace")
	}
	if SecretName(ConfigID("ProviderConfig", "team-a", "x"), ep, 42) == SecretName(ConfigID("ProviderConfig", "team-b", "x"), ep, 42) {
		t.Error("two namespaces' configs of one name share a team key Secret name")
	}
}

// The legacy name is the one releases before the full-length hash wrote; it
// must stay exactly as it was, or keys written then are never carried over.
func TestLegacySecretName(t *testing.T) {
	cfg, ep := ConfigID("ClusterProviderConfig", "", "platform-oncall.terdut"), "http://terdut.platform-oncall.svc:8080"
	if got, want := LegacySecretName(cfg, ep, 42), "terdut-team-eb750caed0-42"; got != want {
		t.Errorf("LegacySecretName = %q, want %q", got, want)
	}
}
