package controllertest

import (
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// Deleting reconciles an MR being deleted as the runtime does, up to n
// times: tick, then Observe the MR get returns (what each reconcile starts
// from), and Delete it while Observe says its object exists. A reconcile
// whose Observe fails is retried; a Delete that fails ends the test. It
// reports whether the MR let go (Observe said nothing exists).
func Deleting[M resource.Managed](t *testing.T, e managed.TypedExternalClient[M], n int, get func() M, tick func()) bool {
	t.Helper()
	for range n {
		tick()
		mg := get()
		o, err := e.Observe(t.Context(), mg)
		if err != nil {
			continue
		}
		if !o.ResourceExists {
			return true
		}
		if _, err := e.Delete(t.Context(), mg); err != nil {
			t.Fatal(err)
		}
	}
	return false
}
