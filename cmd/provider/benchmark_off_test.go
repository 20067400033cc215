//go:build !bench

package main

import "testing"

// TestBenchmarkSwitchesAreNotShipped: the shipped provider refuses the
// benchmark's side-by-side switches, so no install can turn the list
// sharing, the index lookups or the fair share off.
func TestBenchmarkSwitchesAreNotShipped(t *testing.T) {
	for _, flag := range []string{"--naive", "--first-come-first-served"} {
		if f, err := parse([]string{flag}); err == nil {
			t.Errorf("%s accepted (naive %t, first come first served %t); want an unknown flag", flag, f.naive, f.unfair)
		}
	}
}
