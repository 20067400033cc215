// Package discover reads a running terdut-server and writes the managed
// resources that take it over: one directory per team, each MR named after
// its object (stable RFC 1123 names), with its external name, its children
// wired to their Team by teamIdRef, forProvider as the object is now, and
// managementPolicies ["Observe"]. It only reads: the Server it is given has
// no write, and the command's HTTP transport refuses any.
package discover

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
)

// Server is what discovery reads from terdut-server, and all it may do.
type Server interface {
	ListTeams(ctx context.Context) ([]terdut.Team, error)
	ListUsers(ctx context.Context) ([]terdut.User, error)
	ListServiceAccounts(ctx context.Context) ([]terdut.ServiceAccount, error)
	GetEscalationPolicy(ctx context.Context, teamID int64) (*terdut.EscalationPolicy, error)
	ListDeadmanSwitches(ctx context.Context, teamID int64) ([]terdut.DeadmanSwitch, error)
	ListIntegrations(ctx context.Context, teamID int64) ([]terdut.Integration, error)
}

// A Key names a server object as an MR does: its kind and external name.
type Key struct {
	Kind         string
	ExternalName string
}

// Options say where the MRs go and what the cluster already holds.
type Options struct {
	// ProviderConfig is the provider config every MR names.
	ProviderConfig xpv2.ProviderConfigReference
	// Namespace is the namespace of a team's MRs, given the team and the
	// name its directory has; nil: one namespace per team, of that name.
	Namespace func(t terdut.Team, dir string) string
	// HomeNamespace is where instance-scoped service accounts go: the
	// provider's namespace (only there may they be managed); empty: they
	// are skipped (a namespaced ProviderConfig cannot manage them).
	HomeNamespace string
	// Readers is how many teams are read at once; 0 is 8.
	Readers int
	// Held are the server objects an MR in the cluster already holds (its
	// namespace/name by Key): they are skipped, so that two MRs never hold
	// one object. The children of a held team go to its holder's namespace
	// and name it by teamIdRef: a child's team must be a Team of its own
	// namespace.
	Held map[Key]string
	// Taken are the names of the MRs already in the cluster, as
	// "Kind/namespace/name": none is written again, whatever provider
	// config it names (applying it would change that MR).
	Taken map[string]bool
}

// A File is one manifest, at Path relative to the output directory.
type File struct {
	Path string
	Data []byte
}

// A Skip is a server object no manifest was written for, and why.
type Skip struct {
	Key

	// What is the object, as the server names it.
	What string
	// Why it was skipped.
	Why string
}

// Result is what Discover found and wrote.
type Result struct {
	Files   []File
	Skipped []Skip
	// Written counts the MRs written, by kind.
	Written map[string]int
	// Namespaces are the namespaces the MRs go to, sorted.
	Namespaces []string
}

const (
	// LabelDiscovered marks every MR discovery wrote.
	LabelDiscovered = "terdut.ryuvia.com/discovered"
	observeOnly     = "Observe"
	dirInstance     = "_instance"
)

// Discover reads the server and returns the manifests that take it over.
// The same server gives the same files on every run.
func Discover(ctx context.Context, srv Server, o Options) (Result, error) {
	r := Result{Written: map[string]int{}}
	teams, err := srv.ListTeams(ctx)
	if err != nil {
		return r, fmt.Errorf("cannot list the teams: %w", err)
	}
	users, err := srv.ListUsers(ctx)
	if err != nil {
		return r, fmt.Errorf("cannot list the users: %w", err)
	}
	accounts, err := srv.ListServiceAccounts(ctx)
	if err != nil {
		return r, fmt.Errorf("cannot list the service accounts: %w", err)
	}
	slices.SortFunc(teams, func(a, b terdut.Team) int { return compareID(a.ID, b.ID) })
	slices.SortFunc(accounts, func(a, b terdut.ServiceAccount) int { return compareID(a.ID, b.ID) })
	contents, err := readTeams(ctx, srv, teams, o.Readers)
	if err != nil {
		return r, err
	}
	w := writer{o: o, result: &r, names: names{}, namespaces: map[string]bool{}}
	dirs := names{}
	teamDir := map[int64]team{}
	for i, t := range teams {
		dir := dirs.take("", slug(t.Name, "team", t.ID), t.ID, nil)
		ns := dir
		if o.Namespace != nil {
			ns = o.Namespace(t, dir)
		}
		tm := team{Team: t, dir: dir, namespace: ns}
		if by, held := o.Held[Key{Kind: v1alpha1.TeamKind, ExternalName: strconv.FormatInt(t.ID, 10)}]; held {
			tm.namespace, tm.holder, _ = strings.Cut(by, "/")
		}
		tm.mr = w.team(tm, contents[i], users)
		teamDir[t.ID] = tm
	}
	for _, a := range accounts {
		w.account(a, teamDir)
	}
	r.Namespaces = sortedKeys(w.namespaces)
	return r, nil
}

type team struct {
	terdut.Team

	dir, namespace string
	// holder is the name of the Team MR of namespace that already holds
	// the team; empty when there is none.
	holder string
	// mr is the name of the Team MR its children name.
	mr string
}

type writer struct {
	o          Options
	result     *Result
	names      names
	namespaces map[string]bool
}

// contents are what a team holds on the server.
type contents struct {
	policy       *terdut.EscalationPolicy
	switches     []terdut.DeadmanSwitch
	integrations []terdut.Integration
}

// readTeams reads what each team holds, readers teams at once; the
// answers are in the teams' order, whatever order they came in.
func readTeams(ctx context.Context, srv Server, teams []terdut.Team, readers int) ([]contents, error) {
	if readers <= 0 {
		readers = 8
	}
	out := make([]contents, len(teams))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(readers)
	for i, t := range teams {
		g.Go(func() error {
			c, err := readTeam(ctx, srv, t)
			out[i] = c
			return err
		})
	}
	return out, g.Wait()
}

func readTeam(ctx context.Context, srv Server, t terdut.Team) (contents, error) {
	var c contents
	var err error
	if c.policy, err = srv.GetEscalationPolicy(ctx, t.ID); err != nil {
		return c, fmt.Errorf("cannot read the escalation policy of team %q: %w", t.Name, err)
	}
	if c.switches, err = srv.ListDeadmanSwitches(ctx, t.ID); err != nil {
		return c, fmt.Errorf("cannot list the switches of team %q: %w", t.Name, err)
	}
	if c.integrations, err = srv.ListIntegrations(ctx, t.ID); err != nil {
		return c, fmt.Errorf("cannot list the integrations of team %q: %w", t.Name, err)
	}
	slices.SortFunc(c.switches, func(a, b terdut.DeadmanSwitch) int { return compareID(a.ID, b.ID) })
	slices.SortFunc(c.integrations, func(a, b terdut.Integration) int { return compareID(a.ID, b.ID) })
	return c, nil
}

// team writes a team's Team, policy, switches and integrations, and
// returns the name of the Team MR its children name.
func (w *writer) team(t team, c contents, users []terdut.User) string {
	id := strconv.FormatInt(t.ID, 10)
	name, ok := w.mr(v1alpha1.TeamKind, id, "team "+t.Name, t.namespace, slug(t.Name, "team", t.ID), t.ID)
	if ok {
		p := v1alpha1.TeamParameters{DisplayName: t.Name}
		if t.OIDCMemberGroup != "" || t.OIDCOwnerGroup != "" {
			p.OIDC = &v1alpha1.TeamOIDC{MemberGroup: t.OIDCMemberGroup, OwnerGroup: t.OIDCOwnerGroup}
		}
		w.write(path.Join(t.dir, "team.yaml"), v1alpha1.TeamKind, name, t.namespace, id, p)
	}
	t.mr = name
	if t.holder != "" {
		t.mr = t.holder
	}
	if c.policy != nil && !c.policy.IsEmpty() {
		w.policy(t, *c.policy, users)
	}
	for _, s := range c.switches {
		w.deadmanSwitch(t, s)
	}
	for _, in := range c.integrations {
		w.integration(t, in)
	}
	return t.mr
}

// teamRef is how a child names its team: by reference to its Team MR (the
// one written beside it, or the one holding the team), in its namespace.
func teamRef(t team) *xpv2.Reference { return &xpv2.Reference{Name: t.mr} }

func (w *writer) policy(t team, p terdut.EscalationPolicy, users []terdut.User) {
	id := strconv.FormatInt(t.ID, 10)
	byID := map[int64]string{}
	for _, u := range users {
		byID[u.ID] = u.Username
	}
	params := v1alpha1.EscalationPolicyParameters{RepeatCount: p.RepeatCount, FallbackTopic: p.FallbackTopic, Levels: []v1alpha1.EscalationLevel{}}
	for _, l := range p.Levels {
		level := v1alpha1.EscalationLevel{Timeout: l.Timeout, Targets: []v1alpha1.EscalationTarget{}}
		for _, tg := range l.Targets {
			target := v1alpha1.EscalationTarget{Kind: tg.Kind}
			if tg.UserID != nil {
				u, ok := byID[*tg.UserID]
				if !ok {
					w.skip(v1alpha1.EscalationPolicyKind, id, "the policy of team "+t.Name, fmt.Sprintf("it pages user ID %d, which the server's users list does not have: a policy names users by username", *tg.UserID))
					return
				}
				target.Username = u
			}
			level.Targets = append(level.Targets, target)
		}
		params.Levels = append(params.Levels, level)
	}
	params.TeamIDRef = teamRef(t)
	name, ok := w.mr(v1alpha1.EscalationPolicyKind, id, "the policy of team "+t.Name, t.namespace, slug(t.Name, "policy", t.ID), t.ID)
	if ok {
		w.write(path.Join(t.dir, "escalationpolicy.yaml"), v1alpha1.EscalationPolicyKind, name, t.namespace, id, params)
	}
}

func (w *writer) deadmanSwitch(t team, s terdut.DeadmanSwitch) {
	id := strconv.FormatInt(s.ID, 10)
	p := v1alpha1.DeadmanSwitchParameters{Name: s.Name, Matcher: s.Matcher, Timeout: s.Timeout, Severity: s.Severity}
	if s.Name == terdut.CanonicalMatcher(s.Matcher) {
		// NOTE: a switch made without a name: left empty, its name keeps
		// following its matcher.
		p.Name = ""
	}
	p.TeamIDRef = teamRef(t)
	what := fmt.Sprintf("switch %q of team %s", s.Name, t.Name)
	name, ok := w.mr(v1alpha1.DeadmanSwitchKind, id, what, t.namespace, slug(s.Name, "switch", s.ID), s.ID)
	if ok {
		w.write(path.Join(t.dir, "deadmanswitch-"+name+".yaml"), v1alpha1.DeadmanSwitchKind, name, t.namespace, id, p)
	}
}

func (w *writer) integration(t team, in terdut.Integration) {
	id := strconv.FormatInt(in.ID, 10)
	p := v1alpha1.IntegrationParameters{Kind: in.Kind, Name: in.Name}
	p.TeamIDRef = teamRef(t)
	what := fmt.Sprintf("integration %q of team %s", in.Name, t.Name)
	name, ok := w.mr(v1alpha1.IntegrationKind, id, what, t.namespace, slug(in.Name, "integration", in.ID), in.ID)
	if ok {
		// NOTE: the Secret its url and key go to once the owner hands them
		// over; nothing is written to it while the Integration observes.
		w.write(path.Join(t.dir, "integration-"+name+".yaml"), v1alpha1.IntegrationKind, name, t.namespace, id, p, w.secret(t.namespace, name+"-webhook", in.ID))
	}
}

// account writes a service account: a team's in its team's directory, an
// instance-scoped one in the home namespace. The provider's own team-key
// accounts are never imported.
func (w *writer) account(a terdut.ServiceAccount, teams map[int64]team) {
	id := strconv.FormatInt(a.ID, 10)
	what := "service account " + a.Name
	if strings.HasPrefix(a.Name, credentials.TeamAccountPrefix) {
		w.skip(v1alpha1.ServiceAccountKind, id, what, "the provider's own team key account: a Team keeps it")
		return
	}
	p := v1alpha1.ServiceAccountParameters{Name: a.Name, Scope: a.Scope}
	dir, ns := dirInstance, w.o.HomeNamespace
	if a.Scope != terdut.ScopeTeam && ns == "" {
		w.skip(v1alpha1.ServiceAccountKind, id, what, "instance-scoped: only a ClusterProviderConfig's resources in the provider's namespace may manage it")
		return
	}
	if a.Scope == terdut.ScopeTeam && a.TeamID == nil {
		w.skip(v1alpha1.ServiceAccountKind, id, what, "team-scoped, but the server names no team")
		return
	}
	if a.Scope == terdut.ScopeTeam && a.TeamID != nil {
		t, ok := teams[*a.TeamID]
		if !ok {
			w.skip(v1alpha1.ServiceAccountKind, id, what, fmt.Sprintf("its team %d is not in the server's teams list", *a.TeamID))
			return
		}
		dir, ns = t.dir, t.namespace
		p.TeamIDRef = teamRef(t)
	}
	name, ok := w.mr(v1alpha1.ServiceAccountKind, id, what, ns, slug(a.Name, "account", a.ID), a.ID)
	if ok {
		w.write(path.Join(dir, "serviceaccount-"+name+".yaml"), v1alpha1.ServiceAccountKind, name, ns, id, p, w.secret(ns, name+"-key", a.ID))
	}
}

// secret is the name of an MR's connection Secret in namespace, base unless
// a Secret of that name exists (or an MR names it): one that exists would be
// refused, or taken over, by the runtime's publisher.
func (w *writer) secret(namespace, base string, id int64) string {
	scope := secretScope + "/" + namespace
	return w.names.take(scope, trim(base, maxName), id, func(name string) bool { return w.o.Taken[scope+"/"+name] })
}

// mr is the name of the MR for a server object, unique among its kind in
// its namespace; false when an MR in the cluster already holds the object.
func (w *writer) mr(kind, externalName, what, namespace, base string, id int64) (string, bool) {
	k := Key{Kind: kind, ExternalName: externalName}
	if by, held := w.o.Held[k]; held {
		w.result.Skipped = append(w.result.Skipped, Skip{Key: k, What: what, Why: "held by " + kind + " " + by})
		return "", false
	}
	scope := kind + "/" + namespace
	return w.names.take(scope, base, id, func(name string) bool { return w.o.Taken[scope+"/"+name] }), true
}

func (w *writer) skip(kind, externalName, what, why string) {
	w.result.Skipped = append(w.result.Skipped, Skip{Key: Key{Kind: kind, ExternalName: externalName}, What: what, Why: why})
}

// write adds one MR's manifest; connection names its connection Secret
// (none when empty).
func (w *writer) write(file, kind, name, namespace, externalName string, forProvider any, connection ...string) {
	mr := manifest{
		APIVersion: v1alpha1.SchemeGroupVersion.String(),
		Kind:       kind,
		Metadata: metadata{
			Name: name, Namespace: namespace,
			Labels:      map[string]string{LabelDiscovered: "true"},
			Annotations: map[string]string{"crossplane.io/external-name": externalName},
		},
		Spec: spec{ManagementPolicies: []string{observeOnly}, ProviderConfigRef: w.o.ProviderConfig, ForProvider: forProvider},
	}
	if len(connection) > 0 {
		mr.Spec.WriteConnectionSecretToRef = &secretRef{Name: connection[0]}
	}
	data, err := yaml.Marshal(mr)
	if err != nil {
		// NOTE: plain structs of strings, numbers and slices always
		// marshal.
		panic(err)
	}
	w.result.Files = append(w.result.Files, File{Path: file, Data: data})
	w.result.Written[kind]++
	w.namespaces[namespace] = true
}

type manifest struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   metadata `json:"metadata"`
	Spec       spec     `json:"spec"`
}

type metadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type spec struct {
	ManagementPolicies         []string                     `json:"managementPolicies"`
	ProviderConfigRef          xpv2.ProviderConfigReference `json:"providerConfigRef"`
	ForProvider                any                          `json:"forProvider"`
	WriteConnectionSecretToRef *secretRef                   `json:"writeConnectionSecretToRef,omitempty"`
}

type secretRef struct {
	Name string `json:"name"`
}

func compareID(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
