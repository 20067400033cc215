//go:build bench

package main

import "testing"

// TestBenchmarkSwitches: a benchmark build takes the side-by-side switches.
func TestBenchmarkSwitches(t *testing.T) {
	f, err := parse([]string{"--naive", "--first-come-first-served"})
	if err != nil || !f.naive || !f.unfair || f.listMaxAge != 0 {
		t.Errorf("naive %t, first come first served %t, list max age %s, %v; want true, true, 0, no error", f.naive, f.unfair, f.listMaxAge, err)
	}
}
