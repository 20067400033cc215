package team

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/credentials"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason  string
		setup   func(t *testing.T, f *controllertest.Fixture, id int64)
		wantErr func(id int64) error
		gone    bool
	}{
		"Delete": {
			reason: "DELETE removes the team from the server.",
			gone:   true,
		},
		"AlreadyGone": {
			reason: "A team already gone is no error: the finalizer may go.",
			setup: func(t *testing.T, f *controllertest.Fixture, id int64) {
				t.Helper()
				_ = f.Client.DeleteTeam(t.Context(), id)
			},
			gone: true,
		},
		"ServerErrorKeepsFinalizer": {
			reason: "A 5xx on DELETE is an error (the finalizer stays) and the team is still there.",
			setup: func(_ *testing.T, f *controllertest.Fixture, _ int64) {
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodDelete, Route: "/api/teams/{id}", Status: http.StatusBadGateway})
			},
			wantErr: func(id int64) error {
				return errors.Wrap(apiErr("DELETE", "/api/teams/"+itoa(id), 502, "injected fault"), errDeleteTeam)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			id := f.Team(t, "Platform")
			if tc.setup != nil {
				tc.setup(t, f, id)
			}
			e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
			_, err := e.Delete(t.Context(), team(withID(id)))
			var wantErr error
			if tc.wantErr != nil {
				wantErr = tc.wantErr(id)
			}
			if diff := cmp.Diff(wantErr, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			f.Server.ClearFaults()
			_, gerr := f.Client.GetTeam(t.Context(), id)
			if gone := terdut.IsNotFound(gerr); gone != tc.gone {
				t.Errorf("\n%s\nDelete(...): team gone from the server = %v, want %v", tc.reason, gone, tc.gone)
			}
		})
	}
}

// keys is a team's scoped key store whose revocation fails as often as told.
type keys struct {
	held       map[int64]bool
	failRevoke int
	// state is each team's key as its Secret says; rotated the rotation
	// requests RotateTeamKey was called with.
	state   map[int64]credentials.TeamKeyState
	rotated []string
}

// TestDeleteRetriesTeamKeyCleanup: Delete removes the team and then its
// scoped key. When the second step fails, the next reconcile must not read
// the team's 404 as "all gone" (the finalizer would go and the key's account
// and Secret leak): Delete runs again until the key is gone too.
func TestDeleteRetriesTeamKeyCleanup(t *testing.T) {
	f := controllertest.New(t)
	id := f.Team(t, "Platform")
	k := &keys{held: map[int64]bool{id: true}, failRevoke: 1}
	cr := team(withID(id))
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)

	// The managed reconciler's deletion: Observe, then Delete while the
	// object exists; the finalizer goes once Observe says it does not.
	for i := 0; ; i++ {
		if i == 5 {
			t.Fatal("the finalizer never went")
		}
		e := &external{api: f.Client, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}, keys: k}
		o, err := e.Observe(t.Context(), cr)
		if err != nil {
			t.Fatalf("reconcile %d: Observe: %v", i, err)
		}
		if !o.ResourceExists {
			break
		}
		_, _ = e.Delete(t.Context(), cr)
	}
	if _, err := f.Client.GetTeam(t.Context(), id); !terdut.IsNotFound(err) {
		t.Errorf("the team is still on the server: %v", err)
	}
	if k.held[id] {
		t.Error("the finalizer went while the team's scoped key was still kept: it leaks")
	}
}
