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
	"sync"
	"testing"
	"time"
)

// TestNoKeyLeaked runs last (this file sorts last): no key the double issued may appear in the
// provider's or the composition function's log, in any MR's or composite's
// status or in any event.
func TestNoKeyLeaked(t *testing.T) {
	scenariof(t, "no key the double issued appears in the provider or function log, MR or composite status, or events")
	all := doubles()
	perDouble := make([][]string, len(all))
	for i, u := range all {
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
	texts := map[string]string{"provider log": string(providerLogs(t))}
	read := func(name, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read the %s: %v", name, err)
		}
		texts[name] = string(b)
	}
	// NOTE: the composition function runs only once a test of claims
	// started it: no log is then no leak.
	if _, err := os.Stat(filepath.Join(env.run, "function.log")); !os.IsNotExist(err) {
		read("function log", filepath.Join(env.run, "function.log"))
	}
	logs, err := filepath.Glob(filepath.Join(env.run, "terdut-double*.log"))
	if err != nil || len(logs) < len(perDouble) {
		t.Fatalf("the doubles' logs: %d files for %d doubles (%v)", len(logs), len(perDouble), err)
	}
	for _, l := range logs {
		read(filepath.Base(l), l)
	}
	for name, args := range statusReads {
		out, err := kubectlOut(nil, args...)
		if noSuchType(err) {
			continue // no XRD installed (a run of some tests only): no composite, no claim
		}
		if err != nil {
			t.Fatalf("read the %s: %v", name, err)
		}
		texts[name] = out
	}
	for _, k := range issued {
		for name, text := range texts {
			if strings.Contains(text, k) {
				t.Errorf("an issued key appears in the %s", name)
			}
		}
	}
	rounds, leaks := env.leaks.stop()
	for _, l := range leaks {
		t.Errorf("while the suite ran: %s", l)
	}
	if rounds < 2 {
		t.Errorf("the statuses were checked %d times while the suite ran, want at least 2", rounds)
	}
	fmt.Printf("    checked %d issued secrets against %d bytes of provider log, %d logs of doubles, and %d looks at every status and event while the suite ran\n",
		len(issued), len(texts["provider log"]), len(logs), rounds)
}

// leakWatch looks, every 15 s while the suite runs, at every MR's,
// composite's and claim's status and every event for the secrets the
// doubles issued so far: a status that held a key and went with its MR
// before the last test would otherwise never be seen. It records where a
// key appeared, never the key.
type leakWatch struct {
	mu     sync.Mutex
	rounds int
	leaks  []string
	quit   chan struct{}
	done   chan struct{}
}

func (w *leakWatch) start() {
	w.quit, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
				w.look()
			}
		}
	}()
}

func (w *leakWatch) look() {
	var issued []string
	for _, u := range doubles() {
		var keys []string
		if adminAt(u, http.MethodGet, "/admin/issued", nil, &keys) == nil {
			issued = append(issued, keys...)
		}
	}
	var leaks []string
	for name, args := range statusReads {
		out, err := kubectlOut(nil, args...)
		if noSuchType(err) {
			continue // no XRD installed yet: no composite, no claim
		}
		if err != nil {
			leaks = append(leaks, fmt.Sprintf("reading the %s failed: %v", name, err))
			continue
		}
		for _, k := range issued {
			if strings.Contains(out, k) {
				leaks = append(leaks, fmt.Sprintf("an issued key appeared in the %s at %s", name, time.Now().Format(time.TimeOnly)))
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rounds++
	w.leaks = append(w.leaks, leaks...)
}

// stop ends the watch and says how many looks it took and what it found.
func (w *leakWatch) stop() (int, []string) {
	if w.quit != nil {
		close(w.quit)
		<-w.done
		w.quit = nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rounds, w.leaks
}

// noSuchType reports whether kubectl failed because the API server serves
// none of the resource types asked for.
func noSuchType(err error) bool {
	return err != nil && strings.Contains(err.Error(), "the server doesn't have a resource type")
}

// statusReads are the kubectl reads of every MR's, composite's and claim's
// status and every event, by what they read.
var statusReads = map[string][]string{
	"MR status":        {"get", "managed", "-A", "-o", "json"},
	"composite status": {"get", "composite,claim", "-A", "-o", "json"},
	"events":           {"get", "events", "-A", "-o", "json"},
}
