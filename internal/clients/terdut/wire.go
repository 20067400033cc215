package terdut

// This file holds every wire shape of terdut-server's REST API that the
// provider relies on. Lines marked [assumed] in ../shared/terdut-api.md are
// our best reading of a contract that is not public: when a real server
// disagrees, this is the one file to correct (and the contract tests in
// contract_test.go, run with TERDUT_URL and TERDUT_TOKEN, say where).

import (
	"sort"
	"strings"
	"time"
)

// API paths. [design] unless noted.
const (
	pathHealthz         = "/healthz"
	pathBootstrap       = "/api/bootstrap"
	pathServiceAccounts = "/api/service-accounts"
	pathUsers           = "/api/users"
	pathTeams           = "/api/teams"
	// pathIntegrations is relative to a team. [assumed].
	pathIntegrations = "integrations"
	pathDeadman      = "deadman/switches"
	pathEscalation   = "escalation"
	pathOIDCGroups   = "oidc-groups"
	pathKeys         = "keys"
)

// headerRateLimitPolicy states the server's request limit, as the IETF
// draft's RateLimit-Policy: "20;w=1" is 20 requests a second. [assumed]: a
// server that sends none is not limited beyond its 429s' Retry-After.
const headerRateLimitPolicy = "Ratelimit-Policy" // RateLimit-Policy, canonical

// Service-account scopes. [design].
const (
	ScopeInstance = "instance"
	ScopeTeam     = "team"
)

// Escalation target kinds. [design].
const (
	TargetOnCall = "oncall"
	TargetUser   = "user"
)

// Integration kinds. "alertmanager" is [design]; the others are
// [assumed]: the design says alert sources are "currently: Alertmanager
// webhook" and that a kind change is a delete and recreate.
const (
	IntegrationAlertmanager = "alertmanager"
	IntegrationGrafana      = "grafana"
	IntegrationWebhook      = "webhook"
)

// A Secret is key material the server shows once: an API key, an
// integration's webhook key or URL. It prints as [redacted] through every fmt
// verb, so it cannot reach a log line or an error by accident; Reveal returns
// the raw value for the one place that must store it.
type Secret string

// String redacts the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts the secret for %#v.
func (s Secret) GoString() string { return s.String() }

// Reveal returns the raw secret. Call it only to store the value where it
// belongs (a Secret's data, an Authorization header).
func (s Secret) Reveal() string { return string(s) }

// User is a terdut-server user. [client].
type User struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	Email     string    `json:"email,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// BootstrapRequest is the body of POST /api/bootstrap. [assumed].
type BootstrapRequest struct {
	Username string `json:"username"`
	Email    string `json:"email,omitempty"`
}

// BootstrapResponse is what POST /api/bootstrap answers with. [design].
type BootstrapResponse struct {
	User   User   `json:"user"`
	APIKey APIKey `json:"api_key"`
}

// APIKey is a minted key; Key is only ever present in the response that
// minted it. [design].
type APIKey struct {
	ID        int64     `json:"id"`
	Key       Secret    `json:"key,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// ServiceAccount is a terdut service account; it never carries a key.
// [design; field names assumed].
type ServiceAccount struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Scope  string `json:"scope"`
	TeamID *int64 `json:"team_id,omitempty"`
}

// Team is a terdut team. [design; fields assumed].
type Team struct {
	ID              int64     `json:"id"`
	Name            string    `json:"name"`
	OIDCMemberGroup string    `json:"oidc_member_group"`
	OIDCOwnerGroup  string    `json:"oidc_owner_group"`
	CreatedAt       time.Time `json:"created_at,omitzero"`
}

// teamName is the body of POST /api/teams and PUT /api/teams/{id}.
type teamName struct {
	Name string `json:"name"`
}

// OIDCGroups is the body of PUT /api/teams/{id}/oidc-groups. [field names assumed].
type OIDCGroups struct {
	MemberGroup string `json:"member_group"`
	OwnerGroup  string `json:"owner_group"`
}

// EscalationPolicy is a team's whole escalation policy. [design; JSON
// names assumed].
type EscalationPolicy struct {
	RepeatCount   int64             `json:"repeat_count"`
	FallbackTopic string            `json:"fallback_topic"`
	Levels        []EscalationLevel `json:"levels"`
}

// IsEmpty reports whether the policy is the empty policy that "deleting" one
// writes (there is no DELETE). [assumed].
func (p EscalationPolicy) IsEmpty() bool {
	return p.RepeatCount == 0 && p.FallbackTopic == "" && len(p.Levels) == 0
}

// EscalationLevel is one level of a policy. Timeout is a Go duration string.
type EscalationLevel struct {
	Timeout string             `json:"timeout"`
	Targets []EscalationTarget `json:"targets"`
}

// EscalationTarget is who a level pages. UserID is set only for kind "user";
// the server has no username field. [design].
type EscalationTarget struct {
	Kind   string `json:"kind"`
	UserID *int64 `json:"user_id,omitempty"`
}

// DeadmanSwitch is one dead man's switch. Timeout is a Go duration string.
// [design].
type DeadmanSwitch struct {
	ID       int64  `json:"id,omitempty"`
	Name     string `json:"name"`
	Matcher  string `json:"matcher"`
	Timeout  string `json:"timeout"`
	Severity string `json:"severity"`
	// CreatedAt is when the server made it, where it says. [assumed]
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Integration is an alert source. URL and Key are present only in the
// response to the POST that created it. [design].
type Integration struct {
	ID   int64  `json:"id,omitempty"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	URL  Secret `json:"url,omitempty"`
	Key  Secret `json:"key,omitempty"`
	// CreatedAt is when the server made it, where it says. [assumed]
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// integrationName is the body of PATCH /api/teams/{id}/integrations/{iid}.
type integrationName struct {
	Name string `json:"name"`
}

// errorBody is the body of every error response: {"error": "..."}. [client].
type errorBody struct {
	Error string `json:"error"`
}

// CanonicalMatcher is the name the server derives for a dead man's switch
// created without one: the matcher's k=v pairs, trimmed, sorted and joined by
// ",". [canonical form assumed, design].
func CanonicalMatcher(matcher string) string {
	parts := strings.Split(matcher, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
			continue
		}
		out = append(out, strings.TrimSpace(k)+"="+strings.TrimSpace(v))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
