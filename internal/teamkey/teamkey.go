// Package teamkey names the Secrets the provider keeps a team's scoped key
// in (seed §6.3), so that the provider, which writes them, and the
// composition function, which tells a TerdutTeam's owner where they are,
// derive the same name.
package teamkey

import (
	"crypto/sha256"
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
// labels.
func ConfigHash(configID, endpoint string) string {
	h := sha256.Sum256([]byte(configID + "\x00" + endpoint))
	return hex.EncodeToString(h[:5])
}

// SecretName is the name of the Secret, in the provider's namespace, that
// holds the scoped key of team teamID on the server of the provider config
// configID at endpoint.
func SecretName(configID, endpoint string, teamID int64) string {
	return "terdut-team-" + ConfigHash(configID, endpoint) + "-" + strconv.FormatInt(teamID, 10)
}
