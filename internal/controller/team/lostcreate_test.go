package team

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/clients/terdut"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

// lostCreate is a Team MR stored in an API server and its external client
// against a double on the provider's own clock; the MR is older than
// anything on the server.
type lostCreate struct {
	f    *controllertest.Fixture
	kube client.Client
	e    *external
	key  client.ObjectKey
	now  *time.Time
}

func newLostCreate(t *testing.T) *lostCreate {
	t.Helper()
	f := controllertest.OnTheProvidersClock(t)
	stored := team()
	stored.SetUID("uid-team")
	stored.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(stored).Build()
	now := time.Now()
	absence := extclient.NewAbsence(extclient.DefaultAbsenceConfirmation)
	absence.Clock = func() time.Time { return now }
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, adopter: extclient.Adopter{Record: rec, Since: time.Now().Add(-time.Hour)}, absence: absence, kube: kube, now: time.Now}
	return &lostCreate{f: f, kube: kube, e: e, key: client.ObjectKeyFromObject(stored), now: &now}
}

// get is the MR as stored: what each reconcile starts from.
func (l *lostCreate) get(t *testing.T) *v1alpha1.Team {
	t.Helper()
	cr := &v1alpha1.Team{}
	if err := l.kube.Get(t.Context(), l.key, cr); err != nil {
		t.Fatal(err)
	}
	return cr
}

// loseAnswer makes the MR's next create commit on the server and its
// answer be lost (a 502 after the commit).
func (l *lostCreate) loseAnswer(t *testing.T) {
	t.Helper()
	l.f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams", Status: http.StatusBadGateway, Commit: true, Times: 1})
	cr := l.get(t)
	if _, err := l.e.Create(t.Context(), cr); err == nil {
		t.Fatal("setup: the create's answer was not lost")
	}
}

// deleteMR deletes the MR and reconciles it until it lets go.
func (l *lostCreate) deleteMR(t *testing.T) {
	t.Helper()
	if err := l.kube.Delete(t.Context(), l.get(t)); err != nil { // the finalizer holds it
		t.Fatal(err)
	}
	if !controllertest.Deleting(t, l.e, 10, func() *v1alpha1.Team { return l.get(t) }, func() { *l.now = l.now.Add(20 * time.Second) }) {
		t.Fatal("the Team did not let go")
	}
}

func (l *lostCreate) teams(t *testing.T) []string {
	t.Helper()
	all := l.f.Server.Snapshot().Teams
	names := make([]string, 0, len(all))
	for _, tm := range all {
		names = append(names, tm.Name)
	}
	return names
}

// A Team whose create committed on the server but whose answer was lost is
// deleted: the team that create made is looked up by the spec's name,
// recorded and deleted, not left on the server with nobody to manage it.
func TestDeletingATeamAfterALostCreateDeletesTheTeamItMade(t *testing.T) {
	l := newLostCreate(t)
	if _, err := l.f.Client.CreateTeam(t.Context(), "Payments"); err != nil { // by hand, another name
		t.Fatal(err)
	}
	l.loseAnswer(t)
	if got := l.teams(t); len(got) != 2 {
		t.Fatalf("setup: teams %v; want Payments and the lost create's Platform", got)
	}
	l.deleteMR(t)
	if got := l.teams(t); len(got) != 1 || got[0] != "Payments" {
		t.Errorf("teams left %v: want only the hand-made Payments (the lost create's Platform deleted with its MR)", got)
	}
}

// A Team's create commits and its answer is lost; the spec is renamed
// before the create is tried again. The retry adopts the team the lost
// create made under the earlier name (and renames it) instead of making a
// second team.
func TestALostCreateThenARenameMakesNoSecondTeam(t *testing.T) {
	l := newLostCreate(t)
	l.loseAnswer(t)
	cr := l.get(t)
	cr.Spec.ForProvider.DisplayName = "Platform Engineering"
	if err := l.kube.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	cr = l.get(t)
	if _, err := l.e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := l.e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := l.e.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if got := l.teams(t); len(got) != 1 || got[0] != "Platform Engineering" {
		t.Errorf("teams %v: want the lost create's team, renamed to Platform Engineering, and no second team", got)
	}
}

// The server refuses a Team's create (422: nothing is made). The MR forgets
// the attempt: when someone then makes a team of that name by hand and the
// MR is deleted, that team is not taken for what the create made, and stays
// (with whatever escalation policy, switches and integrations it holds).
func TestARefusedTeamCreateLeavesNoAttemptToLookFor(t *testing.T) {
	l := newLostCreate(t)
	l.f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams", Status: http.StatusUnprocessableEntity, Times: 1})
	if _, err := l.e.Create(t.Context(), l.get(t)); !terdut.IsRefused(err) {
		t.Fatalf("setup: create answered %v, want the server's 422", err)
	}
	if extclient.Interrupted(l.get(t)) {
		t.Error("the refused create left its attempt marked on the MR")
	}
	if _, err := l.f.Client.CreateTeam(t.Context(), "Platform"); err != nil { // by hand
		t.Fatal(err)
	}
	l.deleteMR(t)
	if got := l.teams(t); len(got) != 1 || got[0] != "Platform" {
		t.Errorf("teams left %v: want the hand-made Platform kept", got)
	}
}

// A Team creates its team normally: the mark and the runtime's
// external-create-succeeded fall in the same second (the POST takes
// milliseconds), and that success counts as recorded. The spec is
// renamed (Update renames team 1); the old name is now free and someone
// makes a team "Platform" by hand. Team 1 is then deleted outside Kubernetes:
// the next Create must make a new "Platform Engineering" team (replaced), not
// adopt the hand-made "Platform" as "what its lost create made" and rename it.
func TestARenamedTeamMadeAgainAdoptsNoHandMadeTeamOfItsOldName(t *testing.T) {
	l := newLostCreate(t)
	cr := l.get(t)
	if _, err := l.e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	first, _, _ := extclient.ExternalID(cr)
	// the runtime: create succeeded, in the same second as the mark
	meta.SetExternalCreateSucceeded(cr, extclient.AttemptedAt(cr))
	if err := l.kube.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	cr = l.get(t)
	if extclient.Interrupted(cr) {
		t.Error("a create whose success was recorded in the same second as its mark counts as interrupted")
	}
	cr.Spec.ForProvider.DisplayName = "Platform Engineering"
	if err := l.kube.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	cr = l.get(t)
	if _, err := l.e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := l.e.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	l.e.observed = nil
	hand, err := l.f.Client.CreateTeam(t.Context(), "Platform") // by hand, the name being free
	if err != nil {
		t.Fatal(err)
	}
	if err := l.f.Client.DeleteTeam(t.Context(), first); err != nil { // outside Kubernetes
		t.Fatal(err)
	}
	if o, err := l.e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Fatalf("Observe %+v %v", o, err)
	}
	if _, err := l.e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := l.e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := l.e.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	got, _, _ := extclient.ExternalID(cr)
	if got == hand.ID {
		t.Errorf("the Team adopted the hand-made team %d (made after it renamed away from that name) as its own; teams now %v", hand.ID, l.teams(t))
	}
	if tm, err := l.f.Client.GetTeam(t.Context(), hand.ID); err != nil || tm.Name != "Platform" {
		t.Errorf("hand-made team %d: %+v %v; want it left alone, named Platform", hand.ID, tm, err)
	}
}

// A Team's team is deleted outside Kubernetes and made again (the CR
// wins); that re-create's POST commits and its answer is lost. The external
// name still names the old, gone team. Deleting the MR deletes the team the
// re-create made too, not only "confirms" the old one gone and lets go.
func TestDeletingATeamAfterALostRecreateDeletesTheTeamItMade(t *testing.T) {
	l := newLostCreate(t)
	cr := l.get(t)
	if _, err := l.e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	first, _, _ := extclient.ExternalID(cr)
	meta.SetExternalCreateSucceeded(cr, time.Now().Add(-time.Minute)) // the runtime, after that Create
	if err := l.kube.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	l.loseRecreateThenDelete(t, first)
}

// As above for a Team that imported its team (external name set by hand, so
// no create of its own was ever recorded): the team is deleted outside
// Kubernetes, made again, and that re-create's answer is lost. Deleting the
// MR deletes the re-created team.
func TestDeletingAnImportedTeamAfterALostRecreateDeletesTheTeamItMade(t *testing.T) {
	l := newLostCreate(t)
	imported, err := l.f.Client.CreateTeam(t.Context(), "Platform") // made elsewhere
	if err != nil {
		t.Fatal(err)
	}
	cr := l.get(t)
	meta.SetExternalName(cr, extclient.FormatID(imported.ID)) // the import
	if err := l.kube.Update(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	l.loseRecreateThenDelete(t, imported.ID)
}

// loseRecreateThenDelete deletes the MR's team id outside Kubernetes, lets
// the re-create's POST commit with its answer lost, deletes the MR and
// checks that no team is left on the server.
func (l *lostCreate) loseRecreateThenDelete(t *testing.T, id int64) {
	t.Helper()
	if err := l.f.Client.DeleteTeam(t.Context(), id); err != nil { // outside Kubernetes
		t.Fatal(err)
	}
	if o, err := l.e.Observe(t.Context(), l.get(t)); err != nil || o.ResourceExists {
		t.Fatalf("setup: Observe %+v, %v; want the team gone", o, err)
	}
	l.loseAnswer(t)
	if got := l.teams(t); len(got) != 1 {
		t.Fatalf("setup: teams %v; want the lost re-create's", got)
	}
	l.deleteMR(t)
	if got := l.teams(t); len(got) != 0 {
		t.Errorf("the Team let go with teams %v left on the server: its lost re-create's team has no MR", got)
	}
}
