package discover_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/deadmanswitch"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/escalationpolicy"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/integration"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/team"
	"git.ryuvia.com/niklas/provider-terdut/internal/discover"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

const adminKey = "tdk_discover_admin"

// brownfield is a server as a platform team finds it: teams made by hand
// (two whose names slug alike), 3-level policies paging users by ID,
// switches with and without names, integrations of each kind, team and
// instance service accounts, and one team key account of the provider's.
func brownfield(t *testing.T) (*terdutdouble.Server, *httptest.Server, terdutdouble.Made) {
	t.Helper()
	d := terdutdouble.New(terdutdouble.Options{AdminKey: adminKey, Users: []string{"alice", "bob"}})
	hs := httptest.NewServer(d.Handler())
	t.Cleanup(hs.Close)
	var alice, bob int64
	for _, u := range d.Snapshot().Users {
		switch u.Username {
		case "alice":
			alice = u.ID
		case "bob":
			bob = u.ID
		}
	}
	var h terdutdouble.HandMade
	for i := range 6 {
		ht := terdutdouble.HandMadeTeam{
			Name: fmt.Sprintf("Payments %d", i),
			Policy: &terdut.EscalationPolicy{RepeatCount: 2, FallbackTopic: "ops", Levels: []terdut.EscalationLevel{
				{Timeout: "5m", Targets: []terdut.EscalationTarget{{Kind: "oncall"}}},
				{Timeout: "10m", Targets: []terdut.EscalationTarget{{Kind: "user", UserID: &alice}}},
				{Timeout: "15m", Targets: []terdut.EscalationTarget{{Kind: "user", UserID: &bob}, {Kind: "oncall"}}},
			}},
			Switches: []terdut.DeadmanSwitch{
				{Name: "Watchdog prod", Matcher: "alertname=Watchdog,cluster=prod", Timeout: "10m", Severity: "critical"},
				{Matcher: "cluster = staging, alertname=Watchdog", Timeout: "1h"},
			},
			Integrations: []terdut.Integration{{Kind: "alertmanager", Name: "am prod"}, {Kind: "grafana", Name: "grafana"}, {Kind: "webhook", Name: "ci"}},
			Accounts:     []string{fmt.Sprintf("payments-%d-bot", i)},
		}
		if i == 1 {
			ht.OIDCMemberGroup, ht.OIDCOwnerGroup = "payments", "payments-leads"
		}
		h.Teams = append(h.Teams, ht)
	}
	h.Teams = append(h.Teams, terdutdouble.HandMadeTeam{Name: "payments-0"}, terdutdouble.HandMadeTeam{Name: "Ω"})
	h.InstanceAccounts = []string{"grafana-sync", "crossplane-team-1"}
	made, err := d.MakeByHand(hs.URL, h)
	if err != nil {
		t.Fatal(err)
	}
	return d, hs, made
}

func client(t *testing.T, url string) *terdut.Client {
	t.Helper()
	c, err := terdut.New(terdut.Options{Endpoint: url, Token: adminKey, ListMaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var cpc = xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}

// TestDiscoveryWritesWhatTakesTheServerOver: every object of a hand-made
// server gets one manifest, observe-only, with its external name, named
// after it (RFC 1123, none colliding), its forProvider equal to the live
// object as each kind compares them (so managing it later writes nothing);
// reading it takes GETs only, one list per kind per team; a second run
// writes the same files.
func TestDiscoveryWritesWhatTakesTheServerOver(t *testing.T) {
	d, hs, _ := brownfield(t)
	st := d.Snapshot()
	before := d.Counters()
	o := discover.Options{ProviderConfig: cpc, HomeNamespace: "crossplane-system"}
	r, err := discover.Discover(t.Context(), client(t, hs.URL), o)
	if err != nil {
		t.Fatal(err)
	}
	after := d.Counters()
	for route, n := range after {
		if n-before[route] > 0 && !strings.HasPrefix(route, http.MethodGet+" ") {
			t.Errorf("discovery sent %d %s: it must only read", n-before[route], route)
		}
		if strings.HasPrefix(route, "GET /api/teams/{id}/") && n-before[route] > len(st.Teams) {
			t.Errorf("%d %s for %d teams: want one per team", n-before[route], route, len(st.Teams))
		}
	}
	if n := after["GET /api/teams"] - before["GET /api/teams"]; n != 1 {
		t.Errorf("the teams were listed %d times, want once", n)
	}

	// 8 teams, 6 policies, 12 switches, 18 integrations, 6 team accounts
	// and 1 instance account; the provider's own team key account is not.
	want := map[string]int{v1alpha1.TeamKind: 8, v1alpha1.EscalationPolicyKind: 6, v1alpha1.DeadmanSwitchKind: 12, v1alpha1.IntegrationKind: 18, v1alpha1.ServiceAccountKind: 7}
	for k, n := range want {
		if r.Written[k] != n {
			t.Errorf("%d %s written, want %d", r.Written[k], k, n)
		}
	}
	if len(r.Skipped) != 1 || r.Skipped[0].What != "service account crossplane-team-1" {
		t.Errorf("skipped %+v, want only the provider's own team key account", r.Skipped)
	}

	unnamed := 0
	seen := map[string]bool{}
	for _, f := range r.Files {
		if mr := parse(t, f); mr.Kind == v1alpha1.DeadmanSwitchKind && mr.Spec.ForProvider.Name == nil {
			unnamed++
		}
		mr := parse(t, f)
		if mr.Spec.ManagementPolicies[0] != "Observe" || len(mr.Spec.ManagementPolicies) != 1 {
			t.Errorf("%s: managementPolicies %v, want [Observe]", f.Path, mr.Spec.ManagementPolicies)
		}
		// NOTE: the CRDs require a connection Secret of both (CEL).
		if wantSecret := mr.Kind == v1alpha1.IntegrationKind || mr.Kind == v1alpha1.ServiceAccountKind; wantSecret != (mr.Spec.WriteConnectionSecretToRef != nil) {
			t.Errorf("%s: writeConnectionSecretToRef %v; an Integration and a ServiceAccount need one, the others have none", f.Path, mr.Spec.WriteConnectionSecretToRef)
		}
		if errs := validation.IsDNS1123Label(mr.Metadata.Name); len(errs) > 0 {
			t.Errorf("%s: name %q is no RFC 1123 label: %v", f.Path, mr.Metadata.Name, errs)
		}
		key := mr.Kind + "/" + mr.Metadata.Namespace + "/" + mr.Metadata.Name
		if seen[key] {
			t.Errorf("%s: two manifests are %s", f.Path, key)
		}
		seen[key] = true
		if diff := liveDiff(t, st, mr, f.Data); diff != "" {
			t.Errorf("%s: forProvider differs from the live object, managing it would write: %s", f.Path, diff)
		}
	}
	if unnamed != 6 {
		t.Errorf("%d switches written without a name, want the 6 made without one (their name keeps following their matcher)", unnamed)
	}
	newer := "payments-0-" + strconv.FormatInt(st.Teams[6].ID, 10)
	if !seen["Team/payments-0/payments-0"] || !seen["Team/"+newer+"/payments-0"] {
		t.Errorf("teams %q and %q (one slug): want the older one's namespace payments-0, the newer's %s; got %v", st.Teams[0].Name, st.Teams[6].Name, newer, seen)
	}
	if !seen["Team/team-"+strconv.FormatInt(st.Teams[7].ID, 10)+"/team-"+strconv.FormatInt(st.Teams[7].ID, 10)] {
		t.Errorf("team %q (no letter of a-z or digit): want it named team-<its ID>", st.Teams[7].Name)
	}

	again, err := discover.Discover(t.Context(), client(t, hs.URL), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Files) != len(r.Files) {
		t.Fatalf("second run: %d files, first %d", len(again.Files), len(r.Files))
	}
	for i := range r.Files {
		if again.Files[i].Path != r.Files[i].Path || !bytes.Equal(again.Files[i].Data, r.Files[i].Data) {
			t.Errorf("second run: %s differs from the first run's %s", again.Files[i].Path, r.Files[i].Path)
		}
	}
}

// TestDiscoverySkipsWhatAnMRHolds: a team an MR in the cluster already
// holds is not written again (two MRs never hold one object); its children
// go to the holder's namespace and name it by teamIdRef (a child's team
// must be a Team of its own namespace), and the skip says which MR holds
// it. The children pass the provider's own team check there.
func TestDiscoverySkipsWhatAnMRHolds(t *testing.T) {
	_, hs, made := brownfield(t)
	id := made.Teams[2].ID
	held := strconv.FormatInt(id, 10)
	r, err := discover.Discover(t.Context(), client(t, hs.URL), discover.Options{
		ProviderConfig: cpc, HomeNamespace: "crossplane-system",
		Held: map[discover.Key]string{{Kind: v1alpha1.TeamKind, ExternalName: held}: "platform/payments"},
	})
	if err != nil {
		t.Fatal(err)
	}
	skipped := make([]string, 0, len(r.Skipped))
	for _, s := range r.Skipped {
		skipped = append(skipped, s.What+": "+s.Why)
	}
	if r.Written[v1alpha1.TeamKind] != 7 || len(skipped) != 2 || !strings.Contains(skipped[0], "held by Team platform/payments") {
		t.Errorf("%d Teams written, skipped %q; want 7, and team %s held by Team platform/payments", r.Written[v1alpha1.TeamKind], skipped, held)
	}
	holder := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "payments", CreationTimestamp: metav1.Now()}}
	meta.SetExternalName(holder, held)
	holder.Status.AtProvider.ID = id
	ref := cpc
	holder.SetProviderConfigReference(&ref)
	kube := fake.NewClientBuilder().WithScheme(controllertest.Scheme(t)).WithObjects(holder).
		WithIndex(&v1alpha1.Team{}, generic.IndexExternalName, generic.ExternalNameOf).Build()
	owners := generic.Owners{Kube: kube, Kind: v1alpha1.DeadmanSwitchKind}
	children := 0
	for _, f := range r.Files {
		if !strings.HasPrefix(f.Path, "payments-2/") {
			continue
		}
		children++
		mr := parse(t, f)
		if mr.Metadata.Namespace != "platform" || mr.Spec.ForProvider.TeamIDRef == nil || mr.Spec.ForProvider.TeamIDRef.Name != "payments" {
			t.Errorf("%s: namespace %s, team ref %v; want platform, payments (the Team holding its team)", f.Path, mr.Metadata.Namespace, mr.Spec.ForProvider.TeamIDRef)
		}
		sw := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: mr.Metadata.Namespace, Name: mr.Metadata.Name}}
		sw.SetProviderConfigReference(&ref)
		if err := owners.CheckTeam(t.Context(), sw, id); err != nil {
			t.Errorf("%s: the provider refuses it: %v", f.Path, err)
		}
	}
	if children == 0 {
		t.Error("no child of the held team written")
	}
}

// TestARerunNeverWritesAnMRsName: no manifest has the name of an MR
// already in the cluster (of any provider config): applying it would turn
// that MR to another object.
func TestARerunNeverWritesAnMRsName(t *testing.T) {
	_, hs, _ := brownfield(t)
	o := discover.Options{ProviderConfig: cpc, HomeNamespace: "crossplane-system", Namespace: func(terdut.Team, string) string { return "ops" }}
	first, err := discover.Discover(t.Context(), client(t, hs.URL), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Held, o.Taken = map[discover.Key]string{}, map[string]bool{}
	for _, f := range first.Files {
		if mr := parse(t, f); mr.Kind == v1alpha1.DeadmanSwitchKind && mr.Metadata.Name == "watchdog-prod" {
			o.Held[discover.Key{Kind: mr.Kind, ExternalName: mr.Metadata.Annotations["crossplane.io/external-name"]}] = "ops/watchdog-prod"
			o.Taken["DeadmanSwitch/ops/watchdog-prod"] = true
		}
	}
	again, err := discover.Discover(t.Context(), client(t, hs.URL), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range again.Files {
		if mr := parse(t, f); mr.Kind == v1alpha1.DeadmanSwitchKind && mr.Metadata.Name == "watchdog-prod" {
			t.Errorf("%s is DeadmanSwitch ops/watchdog-prod (external name %s), the name of an MR in the cluster", f.Path, mr.Metadata.Annotations["crossplane.io/external-name"])
		}
	}
}

// TestNoSecretInAManifest: no integration URL or key, and no key at all,
// is written.
func TestNoSecretInAManifest(t *testing.T) {
	_, hs, made := brownfield(t)
	r, err := discover.Discover(t.Context(), client(t, hs.URL), discover.Options{ProviderConfig: cpc, HomeNamespace: "crossplane-system"})
	if err != nil {
		t.Fatal(err)
	}
	secrets := make([]string, 0, 4+2*len(made.Integrations))
	secrets = append(secrets, "tdk_", "tdi_", "tdu_", "/api/alerts/")
	for _, in := range made.Integrations {
		secrets = append(secrets, in.URL.Reveal(), in.Key.Reveal())
	}
	for _, f := range r.Files {
		for _, s := range secrets {
			if strings.Contains(string(f.Data), s) {
				t.Errorf("%s holds a secret (%d bytes)", f.Path, len(s))
			}
		}
	}
}

// TestNoInstanceAccountWithoutAHome: with no home namespace (a namespaced
// ProviderConfig), instance-scoped accounts are skipped with the reason: no
// namespace but the provider's may manage them.
func TestNoInstanceAccountWithoutAHome(t *testing.T) {
	_, hs, _ := brownfield(t)
	r, err := discover.Discover(t.Context(), client(t, hs.URL), discover.Options{ProviderConfig: cpc, Namespace: func(terdut.Team, string) string { return "team-a" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Files {
		if strings.HasPrefix(f.Path, "_instance/") {
			t.Errorf("%s written: an instance-scoped account outside the provider's namespace is refused", f.Path)
		}
	}
	found := false
	for _, s := range r.Skipped {
		found = found || (s.What == "service account grafana-sync" && strings.Contains(s.Why, "instance-scoped"))
	}
	if !found {
		t.Errorf("skipped %+v, want grafana-sync with its reason", r.Skipped)
	}
}

type written struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		ManagementPolicies         []string        `json:"managementPolicies"`
		WriteConnectionSecretToRef *xpv2.Reference `json:"writeConnectionSecretToRef"`
		ForProvider                struct {
			Name      *string         `json:"name"`
			TeamID    *int64          `json:"teamId"`
			TeamIDRef *xpv2.Reference `json:"teamIdRef"`
		} `json:"forProvider"`
	} `json:"spec"`
}

func parse(t *testing.T, f discover.File) written {
	t.Helper()
	var w written
	if err := yaml.UnmarshalStrict(f.Data, &w, yaml.DisallowUnknownFields); err != nil {
		// NOTE: forProvider's other fields are the kinds' own.
		if err := yaml.Unmarshal(f.Data, &w); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
	}
	return w
}

// liveDiff compares a manifest's forProvider with the live object, as the
// kind's controller does.
func liveDiff(t *testing.T, st terdutdouble.State, mr written, data []byte) string {
	t.Helper()
	id, err := strconv.ParseInt(mr.Metadata.Annotations["crossplane.io/external-name"], 10, 64)
	if err != nil {
		return "no numeric external name"
	}
	var body struct {
		Spec struct {
			ForProvider map[string]any `json:"forProvider"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &body); err != nil {
		t.Fatal(err)
	}
	raw, _ := yaml.Marshal(body.Spec.ForProvider)
	switch mr.Kind {
	case v1alpha1.TeamKind:
		return diffByID(t, raw, st.Teams, id, func(tm terdut.Team) int64 { return tm.ID },
			func(p v1alpha1.TeamParameters, tm terdut.Team) string { return team.Diff(p, &tm) })
	case v1alpha1.EscalationPolicyKind:
		var p v1alpha1.EscalationPolicyParameters
		must(t, yaml.UnmarshalStrict(raw, &p))
		want, _, missing := escalationpolicy.Resolve(p, st.Users)
		if len(missing) > 0 {
			return fmt.Sprintf("usernames %v unknown", missing)
		}
		return escalationpolicy.Diff(want, st.Policies[id])
	case v1alpha1.DeadmanSwitchKind:
		return diffByID(t, raw, st.Switches, id, func(s terdutdouble.StateSwitch) int64 { return s.ID },
			func(p v1alpha1.DeadmanSwitchParameters, s terdutdouble.StateSwitch) string {
				return deadmanswitch.Diff(p, s.DeadmanSwitch)
			})
	case v1alpha1.IntegrationKind:
		return diffByID(t, raw, st.Integrations, id, func(in terdutdouble.StateIntegration) int64 { return in.ID },
			func(p v1alpha1.IntegrationParameters, in terdutdouble.StateIntegration) string {
				return integration.Diff(p, in.Integration)
			})
	case v1alpha1.ServiceAccountKind:
		return diffByID(t, raw, st.ServiceAccounts, id, func(a terdutdouble.StateAccount) int64 { return a.ID },
			func(p v1alpha1.ServiceAccountParameters, a terdutdouble.StateAccount) string {
				if a.Name != p.Name || a.Scope != p.Scope {
					return fmt.Sprintf("account %s/%s, manifest %s/%s", a.Name, a.Scope, p.Name, p.Scope)
				}
				return ""
			})
	}
	return "no live object of that ID"
}

// diffByID is diff of the forProvider raw and the live object of ID id.
func diffByID[P, O any](t *testing.T, raw []byte, live []O, id int64, idOf func(O) int64, diff func(P, O) string) string {
	t.Helper()
	var p P
	must(t, yaml.UnmarshalStrict(raw, &p))
	for _, o := range live {
		if idOf(o) == id {
			return diff(p, o)
		}
	}
	return "no live object of that ID"
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
