package generic

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// patches counts the resolutions handed on to be written.
type patches struct{ n int }

func (p *patches) ResolveReferences(context.Context, resource.Managed) error {
	p.n++
	return nil
}

// A switch whose team reference is already resolved is not written again; one
// whose team got an ID (or a new one, resolve: Always) is; one whose team is
// missing says so.
func TestReferencesWriteOnlyWhatChanged(t *testing.T) {
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ops"}}
	meta.SetExternalName(team, "42")
	kube := fakeBuilder(t).WithObjects(team).Build()
	sw := func(id *int64, ref string) *v1alpha1.DeadmanSwitch {
		s := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "wd"}}
		s.Spec.ForProvider.TeamID = id
		s.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: ref}
		return s
	}

	p := &patches{}
	r := References{Reader: kube, Patch: p}
	if err := r.ResolveReferences(t.Context(), sw(new(int64(42)), "ops")); err != nil || p.n != 0 {
		t.Fatalf("resolved already: err %v, %d writes; want none", err, p.n)
	}
	if err := r.ResolveReferences(t.Context(), sw(nil, "ops")); err != nil || p.n != 1 {
		t.Fatalf("unresolved: err %v, %d writes; want 1", err, p.n)
	}
	always := sw(new(int64(7)), "ops")
	always.Spec.ForProvider.TeamIDRef.Policy = &xpv2.Policy{Resolve: new(xpv2.ResolvePolicyAlways)}
	if err := r.ResolveReferences(t.Context(), always); err != nil || p.n != 2 {
		t.Fatalf("team's ID changed (resolve: Always): err %v, %d writes; want 2", err, p.n)
	}
	err := r.ResolveReferences(t.Context(), sw(nil, "gone"))
	if err == nil || !strings.Contains(err.Error(), "spec.forProvider.teamId") || p.n != 2 {
		t.Fatalf("missing team: err %v, %d writes; want an error naming teamId and no write", err, p.n)
	}
	if err := r.ResolveReferences(t.Context(), &v1alpha1.Team{}); err != nil || p.n != 2 {
		t.Fatalf("a kind without references: err %v, %d writes", err, p.n)
	}
}
