package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

func TestTeamReferenceStaysInNamespace(t *testing.T) {
	s := runtime.NewScheme()
	_ = AddToScheme(s)
	mine := &Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "platform", Labels: map[string]string{"team": "platform"}}}
	meta.SetExternalName(mine, "5")
	theirs := &Team{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "other", Labels: map[string]string{"team": "other"}}}
	meta.SetExternalName(theirs, "9")
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(mine, theirs).Build()

	cases := map[string]struct {
		reason string
		ref    *xpv2.Reference
		sel    *xpv2.Selector
		want   int64
		err    bool
	}{
		"RefInNamespace":     {reason: "A reference resolves a Team in the child's namespace.", ref: &xpv2.Reference{Name: "platform"}, want: 5},
		"RefOtherNamespace":  {reason: "A Team of another namespace is not found by name.", ref: &xpv2.Reference{Name: "other"}, err: true},
		"SelectorNamespaced": {reason: "A selector only matches Teams in the child's namespace.", sel: &xpv2.Selector{MatchLabels: map[string]string{"team": "other"}}, err: true},
		"Selector":           {reason: "A selector resolves a Team in the child's namespace.", sel: &xpv2.Selector{MatchLabels: map[string]string{"team": "platform"}}, want: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sw := &DeadmanSwitch{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "watchdog"}}
			sw.Spec.ForProvider.TeamIDRef, sw.Spec.ForProvider.TeamIDSelector = tc.ref, tc.sel
			err := sw.ResolveReferences(t.Context(), kube)
			if (err != nil) != tc.err {
				t.Fatalf("\n%s\nResolveReferences: %v, want error %v", tc.reason, err, tc.err)
			}
			if !tc.err && (sw.Spec.ForProvider.TeamID == nil || *sw.Spec.ForProvider.TeamID != tc.want) {
				t.Errorf("\n%s\nteamId = %v, want %d", tc.reason, sw.Spec.ForProvider.TeamID, tc.want)
			}
		})
	}
}
