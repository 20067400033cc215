package terdut

// The API's calls, one method each, in the order of ../shared/terdut-api.md.

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

func id(n int64) string { return strconv.FormatInt(n, 10) }

func teamPath(teamID int64, rest ...string) string {
	var p strings.Builder
	p.WriteString(pathTeams + "/" + id(teamID))
	for _, r := range rest {
		p.WriteString("/" + r)
	}
	return p.String()
}

// Healthz answers nil when GET /healthz answers 200.
func (c *Client) Healthz(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, pathHealthz, nil, nil, nil)
}

// Bootstrap calls the single-shot POST /api/bootstrap.
func (c *Client) Bootstrap(ctx context.Context, r BootstrapRequest) (*BootstrapResponse, error) {
	out := &BootstrapResponse{}
	return out, c.do(ctx, http.MethodPost, pathBootstrap, nil, r, out)
}

// ListUsers returns every user. Any key may read them, so the answer is
// shared among every client of the server.
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var out []User
	return out, c.shared(ctx, viewAnyKey, pathUsers, &out)
}

// CheckKey asks the server, past every shared answer, whether it accepts
// the client's key: nil when it does; a 401 (IsUnauthorized) when it does
// not; any other error says nothing about the key.
func (c *Client) CheckKey(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, pathUsers, nil, nil, nil)
}

// CreateServiceAccount creates a service account; a 409 means the name exists.
func (c *Client) CreateServiceAccount(ctx context.Context, sa ServiceAccount) (*ServiceAccount, error) {
	out := &ServiceAccount{}
	return out, c.do(ctx, http.MethodPost, pathServiceAccounts, nil, sa, out)
}

// GetServiceAccountByName returns the named account, or nil when none has
// that name.
func (c *Client) GetServiceAccountByName(ctx context.Context, name string) (*ServiceAccount, error) {
	var out []ServiceAccount
	if err := c.do(ctx, http.MethodGet, pathServiceAccounts, url.Values{"name": {name}}, nil, &out); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Name == name {
			return &out[i], nil
		}
	}
	return nil, nil //nolint:nilnil // No account of that name is not an error.
}

// ListServiceAccounts returns every service account (none carries a key).
func (c *Client) ListServiceAccounts(ctx context.Context) ([]ServiceAccount, error) {
	var out []ServiceAccount
	return out, c.do(ctx, http.MethodGet, pathServiceAccounts, nil, nil, &out)
}

// DeleteServiceAccount deletes an account and its keys.
func (c *Client) DeleteServiceAccount(ctx context.Context, accountID int64) error {
	return c.do(ctx, http.MethodDelete, pathServiceAccounts+"/"+id(accountID), nil, nil, nil)
}

// MintKey mints a new key on an account; the raw key is only in this answer.
func (c *Client) MintKey(ctx context.Context, accountID int64) (*APIKey, error) {
	out := &APIKey{}
	return out, c.do(ctx, http.MethodPost, pathServiceAccounts+"/"+id(accountID)+"/"+pathKeys, nil, struct{}{}, out)
}

// ListKeys lists an account's valid keys: their IDs and when they were made,
// never the keys themselves. The endpoint is assumed, not documented.
func (c *Client) ListKeys(ctx context.Context, accountID int64) ([]APIKey, error) {
	var out []APIKey
	return out, c.do(ctx, http.MethodGet, pathServiceAccounts+"/"+id(accountID)+"/"+pathKeys, nil, nil, &out)
}

// RevokeKey revokes one key of an account.
func (c *Client) RevokeKey(ctx context.Context, accountID, keyID int64) error {
	return c.do(ctx, http.MethodDelete, pathServiceAccounts+"/"+id(accountID)+"/"+pathKeys+"/"+id(keyID), nil, nil, nil)
}

// CreateTeam creates a team; a 409 means the name exists.
func (c *Client) CreateTeam(ctx context.Context, name string) (*Team, error) {
	out := &Team{}
	return out, c.do(ctx, http.MethodPost, pathTeams, nil, teamName{Name: name}, out)
}

// ListTeams returns every team; with shared lists, one answer serves every
// caller of the key.
func (c *Client) ListTeams(ctx context.Context) ([]Team, error) {
	var out []Team
	return out, c.shared(ctx, c.keyView(), pathTeams, &out)
}

// GetTeam returns one team. With shared lists it is found in the list of
// all teams (one request for every Team of a provider config). A team the
// list omits is read by itself (ReadTeam): a list can omit a team that
// exists (it lags, or it lies), and only the server's own 404 means the team
// is gone. A Team that took a list's silence for a 404 made a second team in
// its place, or let its finalizer go with the team left on the server.
func (c *Client) GetTeam(ctx context.Context, teamID int64) (*Team, error) {
	if c.lists == nil {
		return c.ReadTeam(ctx, teamID)
	}
	var all []Team
	if err := c.shared(ctx, c.keyView(), pathTeams, &all); err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].ID == teamID {
			return &all[i], nil
		}
	}
	return c.ReadTeam(ctx, teamID)
}

// ReadTeam returns one team as GET /api/teams/{id} answers now, past every
// shared answer: its 404 is the server's own.
func (c *Client) ReadTeam(ctx context.Context, teamID int64) (*Team, error) {
	out := &Team{}
	return out, c.do(ctx, http.MethodGet, teamPath(teamID), nil, nil, out)
}

// GetTeamByName returns the named team, or nil when none has that name.
func (c *Client) GetTeamByName(ctx context.Context, name string) (*Team, error) {
	var out []Team
	if err := c.do(ctx, http.MethodGet, pathTeams, url.Values{"name": {name}}, nil, &out); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Name == name {
			return &out[i], nil
		}
	}
	return nil, nil //nolint:nilnil // No team of that name is not an error.
}

// RenameTeam renames a team.
func (c *Client) RenameTeam(ctx context.Context, teamID int64, name string) error {
	return c.do(ctx, http.MethodPut, teamPath(teamID), nil, teamName{Name: name}, nil)
}

// SetOIDCGroups sets a team's OIDC group mapping.
func (c *Client) SetOIDCGroups(ctx context.Context, teamID int64, g OIDCGroups) error {
	return c.do(ctx, http.MethodPut, teamPath(teamID, pathOIDCGroups), nil, g, nil)
}

// DeleteTeam deletes a team and its rows.
func (c *Client) DeleteTeam(ctx context.Context, teamID int64) error {
	return c.do(ctx, http.MethodDelete, teamPath(teamID), nil, nil, nil)
}

// GetEscalationPolicy returns a team's whole policy.
func (c *Client) GetEscalationPolicy(ctx context.Context, teamID int64) (*EscalationPolicy, error) {
	out := &EscalationPolicy{}
	return out, c.do(ctx, http.MethodGet, teamPath(teamID, pathEscalation), nil, nil, out)
}

// PutEscalationPolicy replaces a team's whole policy.
func (c *Client) PutEscalationPolicy(ctx context.Context, teamID int64, p EscalationPolicy) error {
	if p.Levels == nil {
		p.Levels = []EscalationLevel{}
	}
	return c.do(ctx, http.MethodPut, teamPath(teamID, pathEscalation), nil, p, nil)
}

// ListDeadmanSwitches returns a team's switches; with shared lists, one
// answer serves every switch of the team.
func (c *Client) ListDeadmanSwitches(ctx context.Context, teamID int64) ([]DeadmanSwitch, error) {
	var out []DeadmanSwitch
	return out, c.shared(ctx, c.keyView(), teamPath(teamID, pathDeadman), &out)
}

// ListDeadmanSwitchesFresh returns a team's switches as the server lists
// them now, past the shared answers (which it then replaces): what confirms
// that a switch a list did not show is gone.
func (c *Client) ListDeadmanSwitchesFresh(ctx context.Context, teamID int64) ([]DeadmanSwitch, error) {
	var out []DeadmanSwitch
	return out, c.fresh(ctx, teamPath(teamID, pathDeadman), &out)
}

// CreateDeadmanSwitch creates a switch. The server has no unique names.
func (c *Client) CreateDeadmanSwitch(ctx context.Context, teamID int64, s DeadmanSwitch) (*DeadmanSwitch, error) {
	out := &DeadmanSwitch{}
	s.ID = 0
	return out, c.do(ctx, http.MethodPost, teamPath(teamID, pathDeadman), nil, s, out)
}

// UpdateDeadmanSwitch replaces a switch in place.
func (c *Client) UpdateDeadmanSwitch(ctx context.Context, teamID, switchID int64, s DeadmanSwitch) error {
	s.ID = 0
	return c.do(ctx, http.MethodPut, teamPath(teamID, pathDeadman, id(switchID)), nil, s, nil)
}

// DeleteDeadmanSwitch deletes a switch.
func (c *Client) DeleteDeadmanSwitch(ctx context.Context, teamID, switchID int64) error {
	return c.do(ctx, http.MethodDelete, teamPath(teamID, pathDeadman, id(switchID)), nil, nil, nil)
}

// ListIntegrations returns a team's integrations, without URL or key; with
// shared lists, one answer serves every integration of the team.
func (c *Client) ListIntegrations(ctx context.Context, teamID int64) ([]Integration, error) {
	var out []Integration
	return out, c.shared(ctx, c.keyView(), teamPath(teamID, pathIntegrations), &out)
}

// ListIntegrationsFresh returns a team's integrations as the server lists
// them now, past the shared answers (which it then replaces).
func (c *Client) ListIntegrationsFresh(ctx context.Context, teamID int64) ([]Integration, error) {
	var out []Integration
	return out, c.fresh(ctx, teamPath(teamID, pathIntegrations), &out)
}

// CreateIntegration creates an integration. Its answer is the only place its
// URL and key are ever shown.
func (c *Client) CreateIntegration(ctx context.Context, teamID int64, kind, name string) (*Integration, error) {
	out := &Integration{}
	return out, c.do(ctx, http.MethodPost, teamPath(teamID, pathIntegrations), nil, Integration{Kind: kind, Name: name}, out)
}

// RenameIntegration renames an integration; nothing else can change in place.
func (c *Client) RenameIntegration(ctx context.Context, teamID, integrationID int64, name string) error {
	return c.do(ctx, http.MethodPatch, teamPath(teamID, pathIntegrations, id(integrationID)), nil, integrationName{Name: name}, nil)
}

// DeleteIntegration deletes an integration; its key stops working.
func (c *Client) DeleteIntegration(ctx context.Context, teamID, integrationID int64) error {
	return c.do(ctx, http.MethodDelete, teamPath(teamID, pathIntegrations, id(integrationID)), nil, nil, nil)
}

// RevokeUserKey revokes one API key of a user: the bootstrap admin's, once
// the instance key works.
func (c *Client) RevokeUserKey(ctx context.Context, userID, keyID int64) error {
	return c.do(ctx, http.MethodDelete, "/api/users/"+id(userID)+"/api-keys/"+id(keyID), nil, nil, nil)
}
