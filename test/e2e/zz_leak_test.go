//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoKeyLeaked runs last (this file sorts last): no key the double issued may appear in the
// provider's or the composition function's log, in any MR's or composite's
// status or in any event.
func TestNoKeyLeaked(t *testing.T) {
	scenariof(t, "no key the double issued appears in the provider or function log, MR or composite status, or events")
	perDouble := make([][]string, len(env.doubles))
	for i, u := range env.doubles {
		if err := adminAt(u, http.MethodGet, "/admin/issued", nil, &perDouble[i]); err != nil {
			t.Fatal(err)
		}
	}
	issued := slices.Concat(perDouble...)
	issued = append(issued, env.stack.Double.AdminKey.Reveal())
	issued = append(issued, env.issued...)
	// The suite's own output is checked after it ends (make e2e runs
	// internal/tools/leakcheck over it): it gets the secrets' hashes only.
	if path := os.Getenv("E2E_ISSUED_HASHES"); path != "" {
		var b strings.Builder
		for _, k := range issued {
			h := sha256.Sum256([]byte(k))
			b.WriteString(hex.EncodeToString(h[:]) + "\n")
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := providerLogs(t)
	fnLog, _ := os.ReadFile(filepath.Join(env.run, "function.log"))
	statuses, _ := kubectlOut(nil, "get", "managed", "-A", "-o", "json")
	composites, _ := kubectlOut(nil, "get", "composite,claim", "-A", "-o", "json")
	doubleLog, _ := os.ReadFile(filepath.Join(env.run, "terdut-double.log"))
	events, _ := kubectlOut(nil, "get", "events", "-A", "-o", "json")
	for _, k := range issued {
		for name, text := range map[string]string{"provider log": string(log), "function log": string(fnLog), "MR status": statuses, "composite status": composites, "events": events, "double log": string(doubleLog)} {
			if strings.Contains(text, k) {
				t.Errorf("an issued key appears in the %s", name)
			}
		}
	}
	fmt.Printf("    checked %d issued secrets against %d bytes of provider log\n", len(issued), len(log))
}
