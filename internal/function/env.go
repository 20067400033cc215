package function

// The environment terdut-server reads. Only PGPASSWORD is from the design
// (docs/terdut-api.md); every other name is [assumed] (there: the
// chart's names are not public) and lives here, and only here, so that
// confirming them against a real server is a one-file change.
const (
	// EnvPGPassword is the database password (libpq's own variable) [design].
	EnvPGPassword = "PGPASSWORD"

	// EnvListenAddr is the address the server listens on. [assumed].
	EnvListenAddr = "TERDUT_LISTEN_ADDR"
	// EnvBaseURL is the server's public URL. [assumed].
	EnvBaseURL = "TERDUT_BASE_URL"
	// EnvDatabaseDSN is the database DSN, without a password. [assumed].
	EnvDatabaseDSN = "TERDUT_DATABASE_DSN"

	// EnvSweeperStaleAfter and EnvSweeperArchiveAfter age incidents. [assumed].
	EnvSweeperStaleAfter   = "TERDUT_SWEEPER_STALE_AFTER"
	EnvSweeperArchiveAfter = "TERDUT_SWEEPER_ARCHIVE_AFTER"

	// EnvDeadmanMatchers, EnvDeadmanTimeout and EnvDeadmanSeverity configure the server's own heartbeat watch. [assumed].
	EnvDeadmanMatchers = "TERDUT_DEADMAN_MATCHERS"
	EnvDeadmanTimeout  = "TERDUT_DEADMAN_TIMEOUT"
	EnvDeadmanSeverity = "TERDUT_DEADMAN_SEVERITY"

	// EnvNotifyNtfyURL, EnvNotifyFallbackTopic, EnvNotifyRepeatEvery and EnvNotifyToken configure ntfy notifications. [assumed].
	EnvNotifyNtfyURL       = "TERDUT_NOTIFY_NTFY_URL"
	EnvNotifyFallbackTopic = "TERDUT_NOTIFY_FALLBACK_TOPIC"
	EnvNotifyRepeatEvery   = "TERDUT_NOTIFY_REPEAT_EVERY"
	EnvNotifyToken         = "TERDUT_NOTIFY_TOKEN"

	// EnvOIDCEnabled and the other EnvOIDC names configure OIDC login. [assumed].
	EnvOIDCEnabled       = "TERDUT_OIDC_ENABLED"
	EnvOIDCIssuer        = "TERDUT_OIDC_ISSUER"
	EnvOIDCClientID      = "TERDUT_OIDC_CLIENT_ID"
	EnvOIDCClientSecret  = "TERDUT_OIDC_CLIENT_SECRET"
	EnvOIDCName          = "TERDUT_OIDC_NAME"
	EnvOIDCScopes        = "TERDUT_OIDC_SCOPES"
	EnvOIDCAllowedGroups = "TERDUT_OIDC_ALLOWED_GROUPS"
	EnvOIDCAdminGroup    = "TERDUT_OIDC_ADMIN_GROUP"
	EnvOIDCSessionMaxAge = "TERDUT_OIDC_SESSION_MAX_AGE"

	// EnvPasswordLogin allows username/password login. [assumed].
	EnvPasswordLogin = "TERDUT_PASSWORD_LOGIN"

	// HealthPath answers 200 when the server is up, without auth. [client].
	HealthPath = "/healthz"
)
