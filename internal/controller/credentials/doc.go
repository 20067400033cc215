// Package credentials turns a managed resource's provider config into a
// client of its terdut-server: the resolved config (config.go), the key its
// Secret holds, read through the scoped Secret cache, and the client cache
// shared by every MR of one config (credentials.go), and each team's own
// scoped key, minted, kept in a Secret of the provider's namespace, rotated
// and revoked, which the team's children use instead of the instance key
// (teamkeys.go).
package credentials
