//go:build !bench

package main

import "flag"

// benchmarkFlags adds nothing: the benchmark's side-by-side switches
// (--naive, --first-come-first-served) are only in a -tags bench build.
func benchmarkFlags(*flag.FlagSet, *flags) {}
