//go:build bench

package main

import "flag"

// benchmarkFlags are the switches of the benchmark's side-by-side "before"
// (make bench-scale builds the provider with -tags bench): the shipped
// provider has neither.
func benchmarkFlags(fs *flag.FlagSet, f *flags) {
	fs.BoolVar(&f.unfair, "first-come-first-served", false, "Spend the reconcile budget in arrival order (crossplane-runtime's global rate limiter) instead of sharing it between namespaces.")
	fs.BoolVar(&f.naive, "naive", false, "No list sharing, and ownership checks that list every MR of a kind.")
}
