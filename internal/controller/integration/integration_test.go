package integration

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

const secret = "prod-alertmanager-terdut-webhook"

type option func(*v1alpha1.Integration)

func integ(teamID int64, o ...option) *v1alpha1.Integration {
	cr := &v1alpha1.Integration{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-alertmanager", Namespace: "team-a", UID: "uid-1"},
		Spec: v1alpha1.IntegrationSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: secret}},
			ForProvider:         v1alpha1.IntegrationParameters{TeamID: &teamID, Kind: "alertmanager", Name: "prod-am"},
		},
	}
	for _, fn := range o {
		fn(cr)
	}
	return cr
}

func withID(id int64) option {
	return func(cr *v1alpha1.Integration) { extclient.SetExternalID(cr, id) }
}

func withKind(k string) option {
	return func(cr *v1alpha1.Integration) { cr.Spec.ForProvider.Kind = k }
}

func withName(n string) option {
	return func(cr *v1alpha1.Integration) { cr.Spec.ForProvider.Name = n }
}

func withDeletion() option {
	return func(cr *v1alpha1.Integration) {
		now := metav1.Now()
		cr.SetDeletionTimestamp(&now)
		cr.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
	}
}

func kube(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	store := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	// NOTE: the fake client does not validate metadata; the API server
	// does, and the provider must live with what it refuses.
	valid := func(obj client.Object) error {
		errs := metav1validation.ValidateLabels(obj.GetLabels(), field.NewPath("metadata", "labels"))
		errs = append(errs, apivalidation.ValidateAnnotations(obj.GetAnnotations(), field.NewPath("metadata", "annotations"))...)
		if len(errs) > 0 {
			return kerrors.NewInvalid(obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetName(), errs)
		}
		return nil
	}
	return interceptor.NewClient(store, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := valid(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := valid(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := valid(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
}

// existingIntegration is an integration created on the double, with its key kept in a
// Secret as Create would have written it.
type existingIntegration struct {
	id     int64
	secret *corev1.Secret
}

func existing(t *testing.T, f *controllertest.Fixture, teamID int64) existingIntegration {
	t.Helper()
	in, err := f.Client.CreateIntegration(t.Context(), teamID, "alertmanager", "prod-am")
	if err != nil {
		t.Fatal(err)
	}
	s := resource.LocalConnectionSecretFor(integ(teamID), v1alpha1.IntegrationGroupVersionKind)
	s.Annotations = map[string]string{AnnotationIntegrationID: extclient.FormatID(in.ID)}
	s.Data = details(in)
	return existingIntegration{id: in.ID, secret: s}
}

func TestObserve(t *testing.T) {
	type want struct {
		o        managed.ExternalObservation
		diff     bool
		err      bool
		reason   xpv2.ConditionReason
		events   []string
		requests int
	}
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails)
		want   want
	}{
		"NoExternalName": {
			reason: "Before Create nothing exists; no request.",
			setup: func(_ *testing.T, _ *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				return integ(teamID), nil, nil
			},
		},
		"UpToDate": {
			reason: "Integration and Secret in place: up to date, and the Secret's data is handed back so the publisher changes nothing.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				s := existing(t, f, teamID)
				return integ(teamID, withID(s.id)), []client.Object{s.secret}, s.secret.Data
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, reason: xpv2.ReasonAvailable, requests: 1},
		},
		"Renamed": {
			reason: "A name changed in the spec is drift, fixed by a rename.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				s := existing(t, f, teamID)
				return integ(teamID, withID(s.id), withName("prod-am-2")), []client.Object{s.secret}, s.secret.Data
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true}, diff: true, reason: xpv2.ReasonAvailable, requests: 1},
		},
		"Drift": {
			reason: "A rename made directly on the server is drift.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				s := existing(t, f, teamID)
				_ = f.Client.RenameIntegration(t.Context(), teamID, s.id, "renamed by hand")
				return integ(teamID, withID(s.id)), []client.Object{s.secret}, s.secret.Data
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true}, diff: true, reason: xpv2.ReasonAvailable, requests: 1},
		},
		"WebhookSecretLost": {
			reason: "The Secret is gone while the integration exists: Ready=False WebhookSecretLost, a Warning event, an error, and no new key.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				return integ(teamID, withID(existing(t, f, teamID).id)), nil, nil
			},
			want: want{err: true, reason: ReasonWebhookSecretLost, events: []string{string(ReasonWebhookSecretLost)}, requests: 1},
		},
		"SecretOfAnotherIntegration": {
			reason: "A Secret holding another integration's key does not hold ours: lost.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				s := existing(t, f, teamID)
				s.secret.Annotations[AnnotationIntegrationID] = "1"
				return integ(teamID, withID(s.id)), []client.Object{s.secret}, nil
			},
			want: want{err: true, reason: ReasonWebhookSecretLost, events: []string{string(ReasonWebhookSecretLost)}, requests: 1},
		},
		"KindChangeIgnoresLostSecret": {
			reason: "A kind change replaces the integration (Create does it) with a new key anyway: the old one is not the desired object, and its lost Secret is not reported.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				return integ(teamID, withID(existing(t, f, teamID).id), withKind("grafana")), nil, nil
			},
			want: want{o: managed.ExternalObservation{ResourceExists: false}, requests: 1},
		},
		"DeletingSkipsSecret": {
			reason: "An Integration being deleted is only looked up: a lost Secret must not block deletion.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				return integ(teamID, withID(existing(t, f, teamID).id), withDeletion()), nil, nil
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, requests: 1},
		},
		"Gone": {
			reason: "An integration missing from its team's list, and from a fresh read of it, is gone.",
			setup: func(_ *testing.T, _ *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				return integ(teamID, withID(999)), nil, nil
			},
			want: want{requests: 2},
		},
		"ServerErrorIsNotGone": {
			reason: "A 5xx on the list is an error, not a missing integration.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) (*v1alpha1.Integration, []client.Object, managed.ConnectionDetails) {
				t.Helper()
				s := existing(t, f, teamID)
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway})
				return integ(teamID, withID(s.id)), []client.Object{s.secret}, nil
			},
			want: want{err: true, requests: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			teamID := f.Team(t, "Platform")
			cr, objs, wantDetails := tc.setup(t, f, teamID)
			f.Server.ResetCounters()
			rec := &controllertest.Recorder{}
			e := &external{api: f.Client, kube: kube(t, objs...), record: rec, adopter: extclient.Adopter{Record: rec}}

			got, err := e.Observe(t.Context(), cr)
			if (err != nil) != tc.want.err {
				t.Errorf("\n%s\nObserve(...): error %v, want error: %v", tc.reason, err, tc.want.err)
			}
			w := tc.want.o
			w.ConnectionDetails = wantDetails
			if diff := cmp.Diff(w, got, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if (got.Diff != "") != tc.want.diff {
				t.Errorf("\n%s\nObserve(...): Diff = %q, want a diff: %v", tc.reason, got.Diff, tc.want.diff)
			}
			if r := cr.GetCondition(xpv2.TypeReady).Reason; r != tc.want.reason {
				t.Errorf("\n%s\nObserve(...): Ready reason %q, want %q", tc.reason, r, tc.want.reason)
			}
			if diff := cmp.Diff(tc.want.events, rec.Reasons(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nObserve(...): events -want, +got:\n%s", tc.reason, diff)
			}
			if n := f.Server.Total(); n != tc.want.requests {
				t.Errorf("\n%s\nObserve(...): %d requests, want %d", tc.reason, n, tc.want.requests)
			}
			if n := f.Server.Count("POST /api/teams/{id}/integrations"); n != 0 {
				t.Errorf("\n%s\nObserve(...): %d POSTs: Observe must never mint a key", tc.reason, n)
			}
		})
	}
}

func getSecret(t *testing.T, k client.Client) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := k.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: secret}, s); err != nil {
		t.Fatalf("get connection Secret: %v", err)
	}
	return s
}

func TestCreate(t *testing.T) {
	type want struct {
		integrations int
		posts        int
		adopted      bool
		err          bool
		recorded     bool
	}
	cases := map[string]struct {
		reason string
		setup  func(t *testing.T, f *controllertest.Fixture, teamID int64) []client.Object
		want   want
	}{
		"AdoptByName": {
			reason: "An integration of this name exists (a crash before its ID was recorded): adopt, no POST, no new key.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) []client.Object {
				t.Helper()
				return []client.Object{existing(t, f, teamID).secret}
			},
			want: want{integrations: 1, adopted: true, recorded: true},
		},
		"AdoptAfter409": {
			reason: "The list missed it and the POST answered 409: list again and adopt.",
			setup: func(t *testing.T, f *controllertest.Fixture, teamID int64) []client.Object {
				t.Helper()
				existing(t, f, teamID)
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodGet, Route: "/api/teams/{id}/integrations", Status: http.StatusOK, Body: "[]", Times: 1})
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusConflict, Times: 1})
				return nil
			},
			want: want{integrations: 1, posts: 1, adopted: true, recorded: true},
		},
		"SecretNotOurs": {
			reason: "The Secret name is taken by a Secret we do not control: refused before any integration (and key) is made, and the error says so.",
			setup: func(*testing.T, *controllertest.Fixture, int64) []client.Object {
				return []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: "team-a"}, Type: corev1.SecretTypeOpaque}}
			},
			want: want{posts: 0, err: true},
		},
		"ServerError": {
			reason: "A failing POST is an error and records no ID.",
			setup: func(_ *testing.T, f *controllertest.Fixture, _ int64) []client.Object {
				f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusInternalServerError})
				return nil
			},
			want: want{posts: 1, err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			teamID := f.Team(t, "Platform")
			objs := tc.setup(t, f, teamID)
			f.Server.ResetCounters()
			rec := &controllertest.Recorder{}
			cr := integ(teamID)
			e := &external{api: f.Client, kube: kube(t, append(objs, cr.DeepCopy())...), record: rec, adopter: extclient.Adopter{Record: rec}}
			_, err := e.Create(t.Context(), cr)
			if (err != nil) != tc.want.err {
				t.Fatalf("\n%s\nCreate(...): %v, want error %v", tc.reason, err, tc.want.err)
			}
			if n := len(f.Server.Snapshot().Integrations); n != tc.want.integrations {
				t.Errorf("\n%s\nCreate(...): %d integrations on the server, want %d", tc.reason, n, tc.want.integrations)
			}
			if n := f.Server.Count("POST /api/teams/{id}/integrations"); n != tc.want.posts {
				t.Errorf("\n%s\nCreate(...): %d POSTs, want %d", tc.reason, n, tc.want.posts)
			}
			if (meta.GetExternalName(cr) != "") != tc.want.recorded {
				t.Errorf("\n%s\nCreate(...): external-name %q, want recorded: %v", tc.reason, meta.GetExternalName(cr), tc.want.recorded)
			}
			if (len(rec.Events) > 0) != tc.want.adopted {
				t.Errorf("\n%s\nCreate(...): events %v, want adoption: %v", tc.reason, rec.Reasons(), tc.want.adopted)
			}
		})
	}
}

func TestRenameKeepsKey(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	k := kube(t, s.secret)
	cr := integ(teamID, withID(s.id), withName("prod-am-2"))
	e := &external{api: f.Client, kube: k, record: &controllertest.Recorder{}, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(t.Context(), cr); err != nil {
		t.Fatalf("Update: %v", err)
	}
	st := f.Server.Snapshot()
	if len(st.Integrations) != 1 || st.Integrations[0].ID != s.id || st.Integrations[0].Name != "prod-am-2" {
		t.Errorf("integrations after a rename = %+v, want ID %d renamed in place", st.Integrations, s.id)
	}
	if diff := cmp.Diff(s.secret.Data, getSecret(t, k).Data); diff != "" {
		t.Errorf("a rename changed the Secret:\n%s", diff)
	}
}

func TestKindChangeRotatesKeyLoudly(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	cr := integ(teamID, withID(s.id), withKind("grafana"))
	k := kube(t, s.secret, cr.DeepCopy())
	if err := k.Get(t.Context(), types.NamespacedName{Namespace: "team-a", Name: cr.Name}, cr); err != nil {
		t.Fatal(err)
	}
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: k, record: rec, adopter: extclient.Adopter{Record: rec}}
	if _, err := e.Observe(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatalf("Create: %v", err)
	}
	st := f.Server.Snapshot()
	if len(st.Integrations) != 1 || st.Integrations[0].ID == s.id || st.Integrations[0].Kind != "grafana" {
		t.Fatalf("integrations after a kind change = %+v, want one new grafana integration", st.Integrations)
	}
	newID := extclient.FormatID(st.Integrations[0].ID)
	sec := getSecret(t, k)
	if sec.Annotations[AnnotationIntegrationID] != newID || bytes.Equal(sec.Data[SecretKeyKey], s.secret.Data[SecretKeyKey]) {
		t.Errorf("Secret after a kind change: annotation %q, key changed %v; want the new integration's new key", sec.Annotations[AnnotationIntegrationID], !bytes.Equal(sec.Data[SecretKeyKey], s.secret.Data[SecretKeyKey]))
	}
	if meta.GetExternalName(cr) != newID {
		t.Errorf("external-name %q after Create (the runtime persists it), want %s", meta.GetExternalName(cr), newID)
	}
	if len(rec.Events) != 1 || rec.Events[0].Type != "Warning" || rec.Events[0].Reason != extclient.ReasonKeyRotated {
		t.Errorf("events = %+v, want one Warning %s", rec.Events, extclient.ReasonKeyRotated)
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason string
		fault  *terdutdouble.Fault
		gone   bool
		err    bool
	}{
		"Delete":                    {reason: "DELETE removes the integration.", gone: true},
		"AlreadyGone":               {reason: "A 404 is success.", fault: &terdutdouble.Fault{Method: http.MethodDelete, Status: http.StatusNotFound, Commit: true}, gone: true},
		"ServerErrorKeepsFinalizer": {reason: "A 5xx is an error; the integration stays.", fault: &terdutdouble.Fault{Method: http.MethodDelete, Status: http.StatusInternalServerError}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := controllertest.New(t)
			teamID := f.Team(t, "Platform")
			s := existing(t, f, teamID)
			if tc.fault != nil {
				f.Server.AddFault(*tc.fault)
			}
			e := &external{api: f.Client, kube: kube(t), record: &controllertest.Recorder{}, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
			_, err := e.Delete(t.Context(), integ(teamID, withID(s.id)))
			if (err != nil) != tc.err {
				t.Errorf("\n%s\nDelete(...): %v, want error %v", tc.reason, err, tc.err)
			}
			if gone := len(f.Server.Snapshot().Integrations) == 0; gone != tc.gone {
				t.Errorf("\n%s\nDelete(...): gone %v, want %v", tc.reason, gone, tc.gone)
			}
		})
	}
}

// secretReads counts the connection Secret's reads past the cache.
type secretReads struct {
	client.Reader
	n int
}

func (r *secretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, o ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.n++
	}
	return r.Reader.Get(ctx, key, obj, o...)
}

// TestCreateReadsTheSecretOnce: a new integration's Create reads its
// connection Secret once past the cache (it read it four times: for an
// interrupted create, for an orphan, before marking it and before writing
// the key; 5,000 reads of the API server at 5,000 MRs), and still leaves
// the url and key in it.
func TestCreateReadsTheSecretOnce(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	k := kube(t, cr.DeepCopy())
	reads := &secretReads{Reader: k}
	e := &external{api: f.Client, kube: k, reader: reads, record: &controllertest.Recorder{}, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	if reads.n != 1 {
		t.Errorf("Create read the connection Secret %d times past the cache, want 1", reads.n)
	}
	s := getSecret(t, k)
	if s.Annotations[AnnotationIntegrationID] != meta.GetExternalName(cr) || len(s.Data[SecretKeyKey]) == 0 || s.Annotations[AnnotationCreating] != "" {
		t.Errorf("the Secret after Create: annotations %v, %d bytes of key; want the integration's ID, its key, no creating mark", s.Annotations, len(s.Data[SecretKeyKey]))
	}
}
