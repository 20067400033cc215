package generic

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/adjust"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
)

// patches counts the resolutions handed on to be written.
type patches struct{ n int }

func (p *patches) ResolveReferences(context.Context, resource.Managed) error {
	p.n++
	return nil
}

// A switch whose team reference is already resolved is not written again; a
// created one whose team got an ID (or a new one, resolve: Always) is; one
// not created yet is resolved in memory, for the create-pending update to
// write; one whose team is missing says so.
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
	created := func(s *v1alpha1.DeadmanSwitch) *v1alpha1.DeadmanSwitch {
		meta.SetExternalName(s, "9")
		return s
	}

	p := &patches{}
	r := References{Reader: kube, Patch: p}
	if err := r.ResolveReferences(t.Context(), created(sw(new(int64(42)), "ops"))); err != nil || p.n != 0 {
		t.Fatalf("resolved already: err %v, %d writes; want none", err, p.n)
	}
	if err := r.ResolveReferences(t.Context(), created(sw(nil, "ops"))); err != nil || p.n != 1 {
		t.Fatalf("unresolved, created: err %v, %d writes; want 1", err, p.n)
	}
	always := created(sw(new(int64(7)), "ops"))
	always.Spec.ForProvider.TeamIDRef.Policy = &xpv2.Policy{Resolve: new(xpv2.ResolvePolicyAlways)}
	if err := r.ResolveReferences(t.Context(), always); err != nil || p.n != 2 {
		t.Fatalf("team's ID changed (resolve: Always): err %v, %d writes; want 2", err, p.n)
	}
	fresh := sw(nil, "ops")
	if err := r.ResolveReferences(t.Context(), fresh); err != nil || p.n != 2 {
		t.Fatalf("unresolved, not created yet: err %v, %d writes; want none (the create-pending update writes it)", err, p.n)
	}
	if got := fresh.Spec.ForProvider.TeamID; got == nil || *got != 42 {
		t.Fatalf("unresolved, not created yet: teamId %v in memory, want 42 for Create and the create-pending update", got)
	}
	err := r.ResolveReferences(t.Context(), sw(nil, "gone"))
	if err == nil || !strings.Contains(err.Error(), "spec.forProvider.teamId") || p.n != 2 {
		t.Fatalf("missing team: err %v, %d writes; want an error naming teamId and no write", err, p.n)
	}
	if err := r.ResolveReferences(t.Context(), &v1alpha1.Team{}); err != nil || p.n != 2 {
		t.Fatalf("a kind without references: err %v, %d writes", err, p.n)
	}
}

// TestCreatingWritesTheResolvedTeamWithThePendingUpdate: crossplane-runtime
// wrote a child's resolved teamId in a patch of its own, and a moment later
// the create-pending update; now the pending update carries it. What must
// not change: teamId is stored before the object is made on the server.
func TestCreatingWritesTheResolvedTeamWithThePendingUpdate(t *testing.T) {
	s := controllertest.Scheme(t)
	team := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ops"}}
	meta.SetExternalName(team, "42")
	cr := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "wd"}}
	cr.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: "ops"}
	updates, patches := 0, 0
	kube := fakeBuilder(t).WithObjects(team, cr).WithStatusSubresource(cr).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			updates++
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, o, p, opts...)
		},
	}).Build()
	var storedBeforeCreate *int64
	connect := controllertest.ConnectTo(adjust.FinalizedOnCreate(controllertest.CreatingServer(func(ctx context.Context, cr *v1alpha1.DeadmanSwitch) (managed.ExternalCreation, error) {
		stored := &v1alpha1.DeadmanSwitch{}
		err := kube.Get(ctx, client.ObjectKeyFromObject(cr), stored)
		storedBeforeCreate = stored.Spec.ForProvider.TeamID
		return managed.ExternalCreation{}, err
	})))
	r := controllertest.NewManagedReconciler[*v1alpha1.DeadmanSwitch](controllertest.FakeManager(kube, s), v1alpha1.DeadmanSwitchGroupVersionKind, connect,
		managed.WithReferenceResolver(References{Reader: kube, Patch: managed.NewAPISimpleReferenceResolver(kube)}))
	if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "wd"}}); err != nil {
		t.Fatal(err)
	}
	if storedBeforeCreate == nil || *storedBeforeCreate != 42 {
		t.Fatalf("teamId stored before the create: %v, want 42", storedBeforeCreate)
	}
	if updates != 2 || patches != 0 {
		t.Errorf("the switch was updated %d and patched %d times to create its object, want 2 and 0 (pending with teamId and the finalizer, then succeeded)", updates, patches)
	}
	stored := &v1alpha1.DeadmanSwitch{}
	if err := kube.Get(t.Context(), client.ObjectKeyFromObject(cr), stored); err != nil {
		t.Fatal(err)
	}
	if id := stored.Spec.ForProvider.TeamID; id == nil || *id != 42 || meta.GetExternalName(stored) != "7" {
		t.Errorf("stored after the create: teamId %v, external name %q; want 42 and 7", id, meta.GetExternalName(stored))
	}
}

// A child whose team reference does not resolve says what it waits for, as
// its Ready condition WaitingForTeam: a Team that does not exist yet, or one
// that has no ID yet (with that Team's own reason: refused, say).
func TestAChildWaitingForItsTeamSaysSo(t *testing.T) {
	refused := &v1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ops"}}
	refused.SetConditions(extclient.Unavailable("RefNotPermitted", `ClusterProviderConfig "default" does not admit namespace "a"`))
	kube := fakeBuilder(t).WithObjects(refused).Build()
	r := References{Reader: kube, Patch: &patches{}, TeamRef: func(mg resource.Managed) string {
		return mg.(*v1alpha1.DeadmanSwitch).Spec.ForProvider.TeamIDRef.Name
	}}
	for ref, want := range map[string]string{
		"ops":     `waiting for Team "ops" (spec.forProvider.teamIdRef) to get its team's ID from the server: it is False, RefNotPermitted: ClusterProviderConfig "default" does not admit namespace "a"`,
		"nothing": `waiting for Team "nothing" (spec.forProvider.teamIdRef), which does not exist in namespace "a"`,
	} {
		sw := &v1alpha1.DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "wd"}}
		sw.Spec.ForProvider.TeamIDRef = &xpv2.Reference{Name: ref}
		if err := r.ResolveReferences(t.Context(), sw); err == nil {
			t.Errorf("teamIdRef %q resolved", ref)
		}
		if c := sw.GetCondition(xpv2.TypeReady); c.Reason != credentials.ReasonWaitingForTeam || c.Message != want {
			t.Errorf("teamIdRef %q: Ready %q %q, want %q %q", ref, c.Reason, c.Message, credentials.ReasonWaitingForTeam, want)
		}
	}
}
