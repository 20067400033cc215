//go:build bench

package generic

// benchmarkBuild: Owners.Naive is honoured (make bench-scale builds the
// provider with -tags bench for its side-by-side "before").
const benchmarkBuild = true
