//go:build !bench

package generic

// benchmarkBuild: Owners.Naive is ignored, and the code behind it compiled
// out; only a -tags bench build honours it.
const benchmarkBuild = false
