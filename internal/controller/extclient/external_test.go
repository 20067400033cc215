package extclient

import (
	"testing"
	"time"
)

// FuzzSameDuration: two spellings of one duration compare equal, the
// comparison is symmetric, and nothing panics on junk.
func FuzzSameDuration(f *testing.F) {
	for _, p := range [][2]string{{"5m", "5m0s"}, {"1h30m", "90m"}, {"", "0s"}, {"x", "x"}, {"15m", "16m"}, {"-1s", "1s"}, {"9223372036854775807ns", "292y"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if SameDuration(a, b) != SameDuration(b, a) {
			t.Fatalf("SameDuration(%q, %q) is not symmetric", a, b)
		}
		if !SameDuration(a, a) {
			t.Fatalf("SameDuration(%q, itself) = false", a)
		}
		if d, err := time.ParseDuration(a); err == nil && !SameDuration(a, d.String()) {
			t.Fatalf("%q and %q are one duration", a, d.String())
		}
		// Two durations that parse differently are never the same.
		da, errA := time.ParseDuration(a)
		db, errB := time.ParseDuration(b)
		if errA == nil && errB == nil && da != db && SameDuration(a, b) {
			t.Fatalf("SameDuration(%q, %q) = true for %s and %s", a, b, da, db)
		}
	})
}
