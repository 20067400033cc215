package terdutdouble

import (
	"errors"
	"net/http"
	"time"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
)

// HandMade is what an operator made on a server by hand before any managed
// resource: teams with their policies, switches, integrations and service
// accounts, and instance-scoped accounts, all made at Made. Making them
// counts no API request: the server is as a platform team finds it.
type HandMade struct {
	// Made is when the objects were made (their created_at); zero is a
	// year before now.
	Made time.Time `json:"made,omitzero"`
	// Teams are made in order, so their IDs follow it.
	Teams []HandMadeTeam `json:"teams"`
	// InstanceAccounts are instance-scoped service accounts, with one key
	// each.
	InstanceAccounts []string `json:"instanceAccounts,omitempty"`
}

// HandMadeTeam is one team and what it holds.
type HandMadeTeam struct {
	Name            string                   `json:"name"`
	OIDCMemberGroup string                   `json:"oidcMemberGroup,omitempty"`
	OIDCOwnerGroup  string                   `json:"oidcOwnerGroup,omitempty"`
	Policy          *terdut.EscalationPolicy `json:"policy,omitempty"`
	// Switches are made as the server makes them: one without a name gets
	// its matcher's canonical form.
	Switches     []terdut.DeadmanSwitch `json:"switches,omitempty"`
	Integrations []terdut.Integration   `json:"integrations,omitempty"`
	// Accounts are team-scoped service accounts, with one key each.
	Accounts []string `json:"accounts,omitempty"`
}

// Made is what MakeByHand made: the teams with their IDs, and each
// integration with the URL and key its owner was shown once (the ones an
// Alertmanager already sends with).
type Made struct {
	Teams        []terdut.Team        `json:"teams"`
	Integrations []terdut.Integration `json:"integrations"`
}

var errHandMade = errors.New("a hand-made team needs a unique name, an integration a kind and a name, a switch a matcher and a timeout, an account a unique name")

// MakeByHand makes h on the server as if by hand (see HandMade). base is the
// server's URL, for the integrations' webhook URLs.
func (s *Server) MakeByHand(base string, h HandMade) (Made, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := h.Made
	if at.IsZero() {
		at = s.now().AddDate(-1, 0, 0)
	}
	at = at.UTC()
	var out Made
	names := map[string]bool{}
	for _, t := range s.teams {
		names[t.Name] = true
	}
	for _, a := range s.accounts {
		names["account "+a.Name] = true
	}
	for _, ht := range h.Teams {
		if ht.Name == "" || names[ht.Name] {
			return out, errHandMade
		}
		names[ht.Name] = true
		t, err := s.makeTeamByHandLocked(base, at, ht, names, &out)
		if err != nil {
			return out, err
		}
		out.Teams = append(out.Teams, t)
	}
	for _, name := range h.InstanceAccounts {
		if !s.makeAccountByHandLocked(names, name, terdut.ScopeInstance, nil) {
			return out, errHandMade
		}
	}
	return out, nil
}

// makeTeamByHandLocked makes one hand-made team and what it holds; the
// integrations it made are added to out.
func (s *Server) makeTeamByHandLocked(base string, at time.Time, ht HandMadeTeam, names map[string]bool, out *Made) (terdut.Team, error) {
	t := terdut.Team{ID: s.id(), Name: ht.Name, OIDCMemberGroup: ht.OIDCMemberGroup, OIDCOwnerGroup: ht.OIDCOwnerGroup, CreatedAt: at}
	s.teams[t.ID] = t
	if ht.Policy != nil {
		s.policies[t.ID] = *ht.Policy
	}
	for _, sw := range ht.Switches {
		if sw.Matcher == "" || sw.Timeout == "" {
			return t, errHandMade
		}
		if sw.Name == "" {
			sw.Name = terdut.CanonicalMatcher(sw.Matcher)
		}
		if sw.Severity == "" {
			sw.Severity = "critical"
		}
		sw.ID, sw.CreatedAt = s.id(), at
		s.switches[sw.ID] = ownedSwitch{teamID: t.ID, DeadmanSwitch: sw}
	}
	for _, in := range ht.Integrations {
		if !validIntegrationKind(in.Kind) || in.Name == "" {
			return t, errHandMade
		}
		in.ID, in.CreatedAt = s.id(), at
		in.URL = terdut.Secret(base + "/api/alerts/" + s.secret("tdu_"))
		in.Key = terdut.Secret(s.secret("tdi_"))
		s.integrations[in.ID] = ownedIntegration{teamID: t.ID, Integration: in}
		out.Integrations = append(out.Integrations, in)
	}
	for _, name := range ht.Accounts {
		id := t.ID
		if !s.makeAccountByHandLocked(names, name, terdut.ScopeTeam, &id) {
			return t, errHandMade
		}
	}
	return t, nil
}

// makeAccountByHandLocked makes a service account with one key, as by hand.
func (s *Server) makeAccountByHandLocked(names map[string]bool, name, scope string, teamID *int64) bool {
	if name == "" || names["account "+name] {
		return false
	}
	names["account "+name] = true
	a := &account{ServiceAccount: terdut.ServiceAccount{ID: s.id(), Name: name, Scope: scope, TeamID: teamID}, keys: map[int64]string{}}
	s.accounts[a.ID] = a
	kid, raw := s.id(), s.secret("tdk_")
	a.keys[kid] = raw
	p := &principal{keyID: kid, accountID: a.ID, scope: scope, created: s.now().UTC()}
	if teamID != nil {
		p.teamID = *teamID
	}
	s.keys[raw] = p
	return true
}

// handMadeRoute serves POST /admin/hand-made (MakeByHand).
func (s *Server) handMadeRoute(w http.ResponseWriter, r *http.Request) {
	var h HandMade
	if !readJSON(w, r, &h) {
		return
	}
	made, err := s.MakeByHand("http://"+r.Host, h)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, made)
}
