//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestNoKeyLeaked runs last (this file sorts last): no key the double issued may appear in the
// provider's log, in any MR's status or in any event.
func TestNoKeyLeaked(t *testing.T) {
	scenario(t, "no key the double issued appears in the provider log, MR status or events")
	var issued []string
	for _, u := range env.doubles {
		var keys []string
		if err := adminAt(u, http.MethodGet, "/admin/issued", nil, &keys); err != nil {
			t.Fatal(err)
		}
		issued = append(issued, keys...)
	}
	log, _ := os.ReadFile(env.providerLog)
	statuses, _ := kubectlOut(nil, "get", "managed", "-A", "-o", "json")
	events, _ := kubectlOut(nil, "get", "events", "-A", "-o", "json")
	for _, k := range issued {
		for name, text := range map[string]string{"provider log": string(log), "MR status": statuses, "events": events} {
			if strings.Contains(text, k) {
				t.Errorf("an issued key appears in the %s", name)
			}
		}
	}
	fmt.Printf("    checked %d issued secrets against %d bytes of provider log\n", len(issued), len(log))
}
