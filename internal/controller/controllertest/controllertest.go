// Package controllertest is the one shared fixture of the controllers'
// tests: the terdut-server test double on httptest, clients for it, and an
// event recorder that keeps what it is told.
package controllertest

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// AdminKey is the fixture double's admin key.
const AdminKey = "tdk_fixture_admin"

// FirstID is the ID of the first object a test creates on a fresh fixture:
// the double numbers everything from one counter, and the fixture uses IDs 1
// to 4 (admin, its key, alice, bob).
const FirstID int64 = 5

// Now is the fixture double's clock: always this instant.
func Now() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }

// Fixture is a running double and a client for it.
type Fixture struct {
	Server *terdutdouble.Server
	Client *terdut.Client
	URL    string
}

// New starts the double with users alice and bob and an admin key; it stops
// when the test ends. Its clock stands at Now.
func New(t *testing.T) *Fixture {
	t.Helper()
	return start(t, Now)
}

// OnTheProvidersClock is New with the double's clock at time.Now: for tests
// of the marks the provider writes with its own clock.
func OnTheProvidersClock(t *testing.T) *Fixture {
	t.Helper()
	return start(t, time.Now)
}

func start(t *testing.T, now func() time.Time) *Fixture {
	t.Helper()
	s := terdutdouble.New(terdutdouble.Options{AdminKey: AdminKey, Users: []string{"alice", "bob"}, Now: now})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	c, err := terdut.New(terdut.Options{Endpoint: hs.URL, Token: AdminKey, MaxRetries: -1})
	if err != nil {
		t.Fatalf("terdut.New: %v", err)
	}
	return &Fixture{Server: s, Client: c, URL: hs.URL}
}

// Team creates a team on the double and returns its ID.
func (f *Fixture) Team(t *testing.T, name string) int64 {
	t.Helper()
	tm, err := f.Client.CreateTeam(t.Context(), name)
	if err != nil {
		t.Fatalf("CreateTeam(%q): %v", name, err)
	}
	return tm.ID
}

// Recorder keeps the events it records.
type Recorder struct {
	mu     sync.Mutex
	Events []event.Event
}

// Event records e.
func (r *Recorder) Event(_ runtime.Object, e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Events = append(r.Events, e)
}

// WithAnnotations returns r.
func (r *Recorder) WithAnnotations(_ ...string) event.Recorder { return r }

// Reasons returns the reasons of the recorded events, in order.
func (r *Recorder) Reasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.Events))
	for _, e := range r.Events {
		out = append(out, string(e.Reason))
	}
	return out
}

// CachedSecrets is what a cache that holds only the Secrets labelled
// key=value shows of the API server api: every other object, but any other
// Secret is not found.
func CachedSecrets(api client.WithWatch, key, value string) client.Client {
	return interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, k, obj, opts...); err != nil {
				return err
			}
			if _, secret := obj.(*corev1.Secret); secret && obj.GetLabels()[key] != value {
				return kerrors.NewNotFound(corev1.Resource("secrets"), k.Name)
			}
			return nil
		},
	})
}

// ValidKeys counts the keys the double d would accept.
func ValidKeys(d *terdutdouble.Server) int {
	n := 0
	for _, k := range d.Keys() {
		if k.Valid {
			n++
		}
	}
	return n
}
