// Package version holds the provider's version, set at build time with
// -ldflags "-X git.ryuvia.com/niklas/provider-terdut/internal/version.Version=v0.1.0".
package version

// Version of the provider.
var Version = "v0.0.0-dev" //nolint:gochecknoglobals // Set at build time by the linker (-X); it cannot be a constant.
