// Package teamkey names the Secrets the provider keeps a team's scoped key
// in, so that the provider, which writes them, and the composition function,
// which tells a TerdutTeam's owner where they are, derive the same name.
package teamkey

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strconv"
)

// Key is the key of a team key Secret that holds the team's API key.
const Key = "token"

// ConfigID names a provider config: its kind, its namespace (none for a
// ClusterProviderConfig) and its name.
func ConfigID(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// ConfigHash names a provider config and its server in Secret names and
// labels: all 256 bits of a SHA-256 of both, 52 characters. A tenant chooses
// its ProviderConfig's name and endpoint freely, so a shorter hash could be
// searched for a pair that names another config's team key Secret.
func ConfigHash(configID, endpoint string) string {
	h := sha256.Sum256([]byte(configID + "\x00" + endpoint))
	// NOTE: lower-case base32 without padding: valid in Secret names and
	// label values.
	return base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).EncodeToString(h[:])
}

// SecretName is the name of the Secret, in the provider's namespace, that
// holds the scoped key of team teamID on the server of the provider config
// configID at endpoint.
func SecretName(configID, endpoint string, teamID int64) string {
	return "terdut-team-" + ConfigHash(configID, endpoint) + "-" + strconv.FormatInt(teamID, 10)
}

// LegacySecretName is the name releases before the full-length hash gave
// that Secret (40 bits of the hash). It is only read, to carry a key it holds
// over to SecretName once its recorded provider config and endpoint are
// checked, and then deleted.
func LegacySecretName(configID, endpoint string, teamID int64) string {
	h := sha256.Sum256([]byte(configID + "\x00" + endpoint))
	return "terdut-team-" + hex.EncodeToString(h[:5]) + "-" + strconv.FormatInt(teamID, 10)
}
