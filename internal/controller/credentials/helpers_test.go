package credentials

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
)

// mayMint lets a team key be minted (a live Team MR holds the team).
func mayMint(context.Context) error { return nil }

// fakeBuilder is a fake client builder with the core kinds and the
// provider's.
func fakeBuilder(t *testing.T) *fake.ClientBuilder {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(controllertest.Scheme(t))
}
