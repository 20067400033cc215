//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// A fleet is a namespace of MRs of every kind: teams, each with its
// escalation policy, two dead man's switches and an integration.
type fleet struct {
	ns    string
	teams int
	// pc is the provider config's name (a ClusterProviderConfig).
	pc string
	// kinds are the integrations' kinds, by team; alertmanager when unset.
	kinds map[int]string
}

func (f fleet) size() int { return f.teams * 5 }

func (f fleet) display(i int) string { return fmt.Sprintf("%s team %d", f.ns, i) }

func (f fleet) kind(i int) string {
	if k := f.kinds[i]; k != "" {
		return k
	}
	return "alertmanager"
}

// yaml is every MR of the fleet.
func (f fleet) yaml() string {
	var b strings.Builder
	for i := range f.teams {
		fmt.Fprintf(&b, `apiVersion: terdut.ryuvia.com/v1alpha1
kind: Team
metadata: {name: t%[1]d, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %[3]s}
  forProvider: {displayName: %[4]q}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: EscalationPolicy
metadata: {name: t%[1]d, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %[3]s}
  forProvider:
    teamIdRef: {name: t%[1]d}
    repeatCount: 1
    levels: [{timeout: 5m, targets: [{kind: oncall}, {kind: user, username: alice}]}]
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: t%[1]d-watchdog, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %[3]s}
  forProvider: {teamIdRef: {name: t%[1]d}, name: watchdog, matcher: alertname=Watchdog, timeout: 15m}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: DeadmanSwitch
metadata: {name: t%[1]d-backup, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %[3]s}
  forProvider: {teamIdRef: {name: t%[1]d}, name: backup, matcher: job=backup, timeout: 26h, severity: warning}
---
apiVersion: terdut.ryuvia.com/v1alpha1
kind: Integration
metadata: {name: t%[1]d-am, namespace: %[2]s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %[3]s}
  forProvider: {teamIdRef: {name: t%[1]d}, kind: %[5]s, name: am}
  writeConnectionSecretToRef: {name: t%[1]d-am-webhook}
---
`, i, f.ns, f.pc, f.display(i), f.kind(i))
	}
	return b.String()
}

// mrsIn lists the MRs of every kind in a namespace.
func mrsIn(ctx context.Context, ns string) ([]resource.Managed, error) {
	var out []resource.Managed
	for _, l := range []resource.ManagedList{&v1alpha1.TeamList{}, &v1alpha1.EscalationPolicyList{}, &v1alpha1.DeadmanSwitchList{}, &v1alpha1.IntegrationList{}} {
		if err := env.kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out = append(out, l.GetItems()...)
	}
	return out, nil
}

// name is "Kind ns/name" of an MR.
func name(mg resource.Managed) string {
	return fmt.Sprintf("%T %s/%s", mg, mg.GetNamespace(), mg.GetName())[len("*v1alpha1."):]
}

// notReady returns the MRs of ns that are not Ready and Synced for their
// current generation (all, while fewer than want exist).
func notReady(ctx context.Context, ns string, want int) ([]string, error) {
	mrs, err := mrsIn(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mg := range mrs {
		why := conditionIs(mg, xpv2.TypeReady, corev1.ConditionTrue, "")
		if why == "" {
			why = conditionIs(mg, xpv2.TypeSynced, corev1.ConditionTrue, "")
		}
		if why != "" {
			out = append(out, fmt.Sprintf("%s (%s)", name(mg), firstLine(why)))
		}
	}
	if len(mrs) < want {
		out = append(out, fmt.Sprintf("%d of %d MRs exist", len(mrs), want))
	}
	return out, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

// waitFleet waits up to d until every MR of f is Ready; it returns how long
// that took and what was still not Ready at the end.
func waitFleet(t *testing.T, f fleet, d time.Duration) (time.Duration, []string) {
	t.Helper()
	start := time.Now()
	var last []string
	for time.Since(start) < d {
		var err error
		if last, err = notReady(t.Context(), f.ns, f.size()); err == nil && len(last) == 0 {
			return time.Since(start), nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return time.Since(start), last
}

// waitGone waits up to d until ns holds no MR; it returns what is left.
func waitGone(t *testing.T, ns string, d time.Duration) []string {
	t.Helper()
	var left []string
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		mrs, err := mrsIn(t.Context(), ns)
		if err != nil {
			continue
		}
		left = left[:0]
		for _, mg := range mrs {
			left = append(left, fmt.Sprintf("%s (finalizers %v, Synced %s)", name(mg), mg.GetFinalizers(), firstLine(mg.GetCondition(xpv2.TypeSynced).Message)))
		}
		if len(left) == 0 {
			return nil
		}
	}
	return left
}

// census is what a fleet's MRs find on the server.
type census struct {
	// duplicates counts server objects beyond one per MR (by natural key).
	duplicates int
	// missing lists MRs with no server object.
	missing []string
	// ids are the MRs' external names, by MR.
	ids map[string]string
	// refused lists Secrets whose key the server does not accept.
	refused []string
}

// count checks every MR of f against the server: exactly one object per MR
// (by its natural key; an integration of its spec's kind), and every webhook
// Secret's key accepted.
func count(t *testing.T, d *terdutdouble.State, f fleet) census {
	t.Helper()
	c := census{ids: map[string]string{}}
	mrs, err := mrsIn(t.Context(), f.ns)
	if err != nil {
		t.Fatal(err)
	}
	teamOf := map[string]int64{}
	for _, mg := range mrs {
		c.ids[name(mg)] = meta.GetExternalName(mg)
		if tm, ok := mg.(*v1alpha1.Team); ok {
			teamOf[tm.Name] = tm.Status.AtProvider.ID
			n := 0
			for _, st := range d.Teams {
				if st.Name == tm.Spec.ForProvider.DisplayName {
					n++
				}
			}
			c.tally(name(mg), n)
		}
	}
	for _, mg := range mrs {
		switch cr := mg.(type) {
		case *v1alpha1.EscalationPolicy:
			p, ok := d.Policies[teamOf[cr.Name]]
			c.tally(name(mg), map[bool]int{true: 1}[ok && !p.IsEmpty()])
		case *v1alpha1.DeadmanSwitch:
			team, _ := strings.CutSuffix(cr.Name, "-"+cr.Spec.ForProvider.Name)
			n := 0
			for _, sw := range d.Switches {
				if sw.TeamID == teamOf[team] && sw.Name == cr.Spec.ForProvider.Name {
					n++
				}
			}
			c.tally(name(mg), n)
		case *v1alpha1.Integration:
			team, _ := strings.CutSuffix(cr.Name, "-am")
			n, kind := 0, false
			for _, in := range d.Integrations {
				if in.TeamID == teamOf[team] && in.Name == cr.Spec.ForProvider.Name {
					n++
					kind = kind || in.Kind == cr.Spec.ForProvider.Kind
				}
			}
			c.tally(name(mg), n)
			if n > 0 && !kind {
				// The kind cannot change in place: an integration of the
				// old kind is one the spec no longer describes.
				c.missing = append(c.missing, fmt.Sprintf("%s: no integration of kind %s on the server", name(mg), cr.Spec.ForProvider.Kind))
			}
			if !webhookKeyAccepted(t, cr) {
				c.refused = append(c.refused, cr.Namespace+"/"+cr.Spec.WriteConnectionSecretToReference.Name)
			}
		}
	}
	return c
}

func (c *census) tally(mr string, n int) {
	switch {
	case n == 0:
		c.missing = append(c.missing, mr)
	case n > 1:
		c.duplicates += n - 1
	}
}

// webhookKeyAccepted reports whether the server accepts the key in an
// Integration's Secret, as the key of that very integration.
func webhookKeyAccepted(t *testing.T, cr *v1alpha1.Integration) bool {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.kube.Get(t.Context(), types.NamespacedName{Namespace: cr.Namespace, Name: cr.Spec.WriteConnectionSecretToReference.Name}, s); err != nil {
		return false
	}
	v := verify(t, string(s.Data["key"]))
	return v.Valid && v.Kind == "integration" && fmt.Sprint(v.ID) == meta.GetExternalName(cr)
}

// verify asks the suite's double whether it accepts key. The key travels
// in the request body only, and is never printed.
func verify(t *testing.T, key string) terdutdouble.Verdict {
	t.Helper()
	var v terdutdouble.Verdict
	if err := admin(http.MethodPost, "/admin/verify", map[string]string{"key": key}, &v); err != nil {
		t.Fatalf("verify a key: %v", err)
	}
	return v
}

// keysNeverUsed counts the service-account keys the double minted after the
// key ID after, those no request ever used, and the orphans: valid keys no
// request used that no Secret holds (held) either, such as a key minted just
// before a crash.
func keysNeverUsed(t *testing.T, held map[int64]bool, after int64) (minted, unused, orphans int) {
	t.Helper()
	for _, k := range serverKeys(t) {
		if k.ID <= after {
			continue
		}
		minted++
		if !k.Used {
			unused++
			if k.Valid && !held[k.ID] {
				orphans++
			}
		}
	}
	return minted, unused, orphans
}

// serverKeys are every service-account key the double minted.
func serverKeys(t *testing.T) []terdutdouble.KeyRecord {
	t.Helper()
	var keys []terdutdouble.KeyRecord
	if err := admin(http.MethodGet, "/admin/keys", nil, &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

// lastKeyID is the highest ID of a key the double minted so far (IDs only
// grow): keys minted after it are a test's own.
func lastKeyID(t *testing.T) int64 {
	t.Helper()
	var last int64
	for _, k := range serverKeys(t) {
		last = max(last, k.ID)
	}
	return last
}

// changedIDs lists the MRs whose external name changed between two
// censuses, but for those allowed to.
func changedIDs(before, after census, allowed ...string) []string {
	var out []string
	for mr, id := range before.ids {
		if now, ok := after.ids[mr]; ok && now != id && !slices.Contains(allowed, mr) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", mr, id, now))
		}
	}
	return out
}
