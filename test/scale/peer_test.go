package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestTheRequestsAreWhatAUserWrites: requests.yaml renders a team and, once
// its id is known, its three dependents, each a provider-http Request that
// reaches the server's route for it with the key from the Secret.
func TestTheRequestsAreWhatAUserWrites(t *testing.T) {
	m := manifest{API: "http://127.0.0.1:1", NS: "peer", I: 7, TeamID: 42, UserID: 3}
	team, err := m.objects("team")
	if err != nil {
		t.Fatal(err)
	}
	deps, err := m.objects("dependents")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"t7":        "http://127.0.0.1:1/api/teams",
		"t7-policy": "http://127.0.0.1:1/api/teams/42/escalation",
		"t7-sw0":    "http://127.0.0.1:1/api/teams/42/deadman/switches",
		"t7-in0":    "http://127.0.0.1:1/api/teams/42/integrations",
	}
	for _, o := range append(team, deps...) {
		u, _ := o.(*unstructured.Unstructured)
		if u.GroupVersionKind() != requestGVK() || u.GetNamespace() != "peer" {
			t.Errorf("%s: %s in %q, want a Request in peer", u.GetName(), u.GroupVersionKind(), u.GetNamespace())
		}
		url, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "payload", "baseUrl")
		if url != want[u.GetName()] {
			t.Errorf("%s: baseUrl %q, want %q", u.GetName(), url, want[u.GetName()])
		}
		delete(want, u.GetName())
		auth, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "forProvider", "headers", "Authorization")
		if len(auth) != 1 || auth[0] != "Bearer {{ "+tokenSecret+":crossplane-system:token }}" {
			t.Errorf("%s: Authorization %q, want the Secret's key injected", u.GetName(), auth)
		}
		body, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "payload", "body")
		if u.GetName() == "t7-policy" && !strings.Contains(body, `"user_id": 3`) {
			t.Errorf("policy body %s: want user_id 3", body)
		}
	}
	if len(want) > 0 {
		t.Errorf("not rendered: %v", want)
	}
}
