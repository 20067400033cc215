package adjust

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// observing answers Observe with err.
type observing struct {
	managed.TypedExternalClient[*v1alpha1.Team]

	err error
}

func (o observing) Observe(context.Context, *v1alpha1.Team) (managed.ExternalObservation, error) {
	return managed.ExternalObservation{ResourceExists: o.err == nil}, o.err
}

// Each Observe is one check, Counted by kind and result.
func TestChecksCountObserves(t *testing.T) {
	c := NewChecks()
	ok := Counted[*v1alpha1.Team](c, "Team", observing{})
	bad := Counted[*v1alpha1.Team](c, "Team", observing{err: errors.New("503")})
	for range 3 {
		if _, err := ok.Observe(t.Context(), &v1alpha1.Team{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bad.Observe(t.Context(), &v1alpha1.Team{}); err == nil {
		t.Fatal("the error was swallowed")
	}
	if n := testutil.ToFloat64(c.vec.WithLabelValues("Team", "ok")); n != 3 {
		t.Errorf("ok checks: %v, want 3", n)
	}
	if n := testutil.ToFloat64(c.vec.WithLabelValues("Team", "error")); n != 1 {
		t.Errorf("failed checks: %v, want 1", n)
	}
	if Counted[*v1alpha1.Team](nil, "Team", observing{}) != (observing{}) {
		t.Error("without Checks the client should be handed back as it is")
	}
}
