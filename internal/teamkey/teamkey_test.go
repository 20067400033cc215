package teamkey

import "testing"

// The name is stable: the provider finds the Secrets it wrote before an
// upgrade by it, so a change here would orphan every team key.
func TestSecretName(t *testing.T) {
	got := SecretName(ConfigID("ClusterProviderConfig", "", "platform-oncall.terdut"), "http://terdut.platform-oncall.svc:8080", 42)
	if want := "terdut-team-" + ConfigHash("ClusterProviderConfig/platform-oncall.terdut", "http://terdut.platform-oncall.svc:8080") + "-42"; got != want {
		t.Errorf("SecretName = %q, want %q", got, want)
	}
	if len(got) != len("terdut-team-")+10+len("-42") {
		t.Errorf("SecretName = %q: want a 10-hex-digit config hash", got)
	}
	if ConfigID("ProviderConfig", "team-a", "x") != "ProviderConfig/team-a/x" {
		t.Error("a namespaced config's ID carries its namespace")
	}
}
