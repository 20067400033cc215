package integration

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/controllertest"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/extclient"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/secretcache"
	"git.ryuvia.com/niklas/provider-terdut/internal/terdutdouble"
)

func TestWebhookSecretLostMessageIsActionable(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID, withID(existing(t, f, teamID).id))
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: kube(t), record: rec, adopter: extclient.Adopter{Record: rec}}
	_, _ = e.Observe(t.Context(), cr)

	c := cr.GetCondition(xpv2.TypeReady)
	want := "Secret \"prod-alertmanager-terdut-webhook\" no longer holds the webhook url and key of integration " + extclient.FormatID(controllertest.FirstID+1) + ", and terdut-server never shows them again. No new key was minted, so nothing that sends to this integration broke. To get a new URL and key, delete and recreate this Integration."
	if c.Status != corev1.ConditionFalse || c.Message != want {
		t.Errorf("Ready = %s %q, want False %q", c.Status, c.Message, want)
	}
	if len(rec.Events) != 1 || rec.Events[0].Type != "Warning" || rec.Events[0].Message != want {
		t.Errorf("events = %+v, want one Warning saying %q", rec.Events, want)
	}
}

func TestCreateWritesSecretBeforeReturning(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	k := kube(t, cr.DeepCopy())
	e := &external{api: f.Client, kube: k, record: &controllertest.Recorder{}, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}

	c, err := e.Create(t.Context(), cr)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	st := f.Server.Snapshot()
	if len(st.Integrations) != 1 || meta.GetExternalName(cr) != extclient.FormatID(st.Integrations[0].ID) {
		t.Fatalf("server integrations %+v, external-name %q: want one, recorded", st.Integrations, meta.GetExternalName(cr))
	}
	s := getSecret(t, k)
	issued := f.Server.Issued()
	if !slices.Contains(issued, string(s.Data[SecretKeyURL])) || !slices.Contains(issued, string(s.Data[SecretKeyKey])) {
		t.Errorf("Secret data is not the url and key the server issued")
	}
	if s.Annotations[AnnotationIntegrationID] != meta.GetExternalName(cr) {
		t.Errorf("Secret annotation %q, want the integration ID %q", s.Annotations[AnnotationIntegrationID], meta.GetExternalName(cr))
	}
	if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != cr.UID || ref.Kind != "Integration" {
		t.Errorf("Secret controller %+v, want the Integration (garbage collected with it)", ref)
	}
	if diff := cmp.Diff(managed.ConnectionDetails(s.Data), c.ConnectionDetails); diff != "" {
		t.Errorf("Create's connection details differ from the Secret:\n%s", diff)
	}
	for _, v := range issued {
		for _, cond := range cr.Status.Conditions {
			if cond.Message == v {
				t.Errorf("a key reached the status")
			}
		}
	}
}

// TestObserveRightAfterCreateWhileCacheLags: the reconcile after Create
// reads the connection Secret from a cache that has not seen it yet: that
// is no lost key (no WebhookSecretLost, no warning), the Secret is there.
func TestObserveRightAfterCreateWhileCacheLags(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	store := kube(t, cr.DeepCopy())
	cache := interceptor.NewClient(store.(client.WithWatch), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return kerrors.NewNotFound(corev1.Resource("secrets"), key.Name)
		},
	})
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: cache, reader: store, record: rec, adopter: extclient.Adopter{Record: rec}}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatalf("Create: %v", err)
	}
	o, err := e.Observe(t.Context(), cr)
	if err != nil || !o.ResourceExists || !o.ResourceUpToDate || len(o.ConnectionDetails[SecretKeyKey]) == 0 {
		t.Errorf("Observe after Create = exists %v, up to date %v, key handed back %v, %v; want all true, no error",
			o.ResourceExists, o.ResourceUpToDate, len(o.ConnectionDetails[SecretKeyKey]) > 0, err)
	}
	if len(rec.Events) != 0 || cr.GetCondition(xpv2.TypeReady).Reason == ReasonWebhookSecretLost {
		t.Errorf("events %+v, Ready reason %q: a lagging cache was read as a lost key", rec.Events, cr.GetCondition(xpv2.TypeReady).Reason)
	}
}

// TestCreateWithALongName: an Integration's name may be 253 characters long,
// longer than a label value may be. Its Secret must be written all the same:
// one POST, one integration, its key in the Secret, and nothing to redo at
// the next reconcile.
func TestCreateWithALongName(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	cr.Name = strings.Repeat("prod-alertmanager-", 5) + "eu-west-1"
	k := kube(t, cr.DeepCopy())
	e := &external{api: f.Client, kube: k, record: &controllertest.Recorder{}, adopter: extclient.Adopter{Record: &controllertest.Recorder{}}}
	for i := range 3 {
		e.replace = nil
		o, err := e.Observe(t.Context(), cr)
		if err != nil {
			t.Fatalf("reconcile %d: Observe: %v", i, err)
		}
		if !o.ResourceExists {
			if _, err := e.Create(t.Context(), cr); err != nil {
				t.Errorf("reconcile %d: Create: %v", i, err)
			}
		}
	}
	if n, posts := len(f.Server.Snapshot().Integrations), f.Server.Count("POST /api/teams/{id}/integrations"); n != 1 || posts != 1 {
		t.Errorf("%d integrations, %d POSTs after three reconciles; want 1 and 1", n, posts)
	}
	if s := getSecret(t, k); len(s.Data[SecretKeyKey]) == 0 || s.Annotations[AnnotationIntegration] != cr.Name {
		t.Errorf("Secret has a key: %v, annotations %v: want the key, and the MR named", len(s.Data[SecretKeyKey]) > 0, s.Annotations)
	}
}

// TestCreateResumesAfterPostWithoutSecret: the POST was committed but its
// answer lost (or the provider killed) before the key was written. The next
// Create must not adopt that integration without a key (WebhookSecretLost
// forever): nobody holds its key, so it is deleted and made again.
func TestCreateResumesAfterPostWithoutSecret(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	k := kube(t, cr.DeepCopy())
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: k, record: rec, adopter: extclient.Adopter{Record: rec}, now: controllertest.Now}
	f.Server.AddFault(terdutdouble.Fault{Method: http.MethodPost, Route: "/api/teams/{id}/integrations", Status: http.StatusBadGateway, Commit: true, Times: 1})
	if _, err := e.Create(t.Context(), cr); err == nil {
		t.Fatal("Create with a lost POST answer: want an error")
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatalf("the resumed Create: %v", err)
	}
	st := f.Server.Snapshot()
	if len(st.Integrations) != 1 || meta.GetExternalName(cr) != extclient.FormatID(st.Integrations[0].ID) {
		t.Fatalf("integrations %+v, external-name %q: want one, recorded", st.Integrations, meta.GetExternalName(cr))
	}
	e.replace = nil
	if o, err := e.Observe(t.Context(), cr); err != nil || !o.ResourceUpToDate || len(o.ConnectionDetails[SecretKeyKey]) == 0 {
		t.Errorf("Observe = %+v, %v: want the integration up to date with its key in the Secret", o, err)
	}
	if got := rec.Reasons(); !slices.Contains(got, string(reasonOrphanDeleted)) {
		t.Errorf("events %v, want %s", got, reasonOrphanDeleted)
	}
}

// TestRecreatedAfterGoneSaysSo: the integration was deleted on the server
// behind the provider's back. The CR wins: it is made again, with a new URL
// and key in the Secret; but every sender with the old key now fails, so a
// Warning KeyRotated names the Secret and the old and new IDs.
func TestRecreatedAfterGoneSaysSo(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	s := existing(t, f, teamID)
	cr := integ(teamID, withID(s.id))
	k := kube(t, s.secret, cr.DeepCopy())
	if err := f.Client.DeleteIntegration(t.Context(), teamID, s.id); err != nil {
		t.Fatal(err)
	}
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: k, record: rec, adopter: extclient.Adopter{Record: rec}}
	if o, err := e.Observe(t.Context(), cr); err != nil || o.ResourceExists {
		t.Fatalf("Observe of a deleted integration = %+v, %v; want gone", o, err)
	}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	newID := meta.GetExternalName(cr)
	if len(rec.Events) != 1 || rec.Events[0].Type != event.TypeWarning || rec.Events[0].Reason != extclient.ReasonKeyRotated {
		t.Fatalf("events %+v, want one Warning %s", rec.Events, extclient.ReasonKeyRotated)
	}
	msg := rec.Events[0].Message
	for _, want := range []string{extclient.FormatID(s.id), newID, secret} {
		if !strings.Contains(msg, want) {
			t.Errorf("KeyRotated message %q does not name %q", msg, want)
		}
	}
	if sec := getSecret(t, k); sec.Annotations[AnnotationIntegrationID] != newID || bytes.Equal(sec.Data[SecretKeyKey], s.secret.Data[SecretKeyKey]) {
		t.Errorf("Secret names integration %q (want %s) with key changed %v", sec.Annotations[AnnotationIntegrationID], newID, !bytes.Equal(sec.Data[SecretKeyKey], s.secret.Data[SecretKeyKey]))
	}
}

// TestASecretOutsideTheCacheIsNotAbsent: the provider caches only the
// Secrets it marked. An integration's connection Secret without the mark
// (written by an earlier version, or relabelled by someone) is still there:
// Observe must not report its key lost, and Create writes the Secret marked.
func TestASecretOutsideTheCacheIsNotAbsent(t *testing.T) {
	f := controllertest.New(t)
	teamID := f.Team(t, "Platform")
	cr := integ(teamID)
	api := kube(t, cr.DeepCopy())
	rec := &controllertest.Recorder{}
	e := &external{api: f.Client, kube: api, record: rec, adopter: extclient.Adopter{Record: rec}}
	if _, err := e.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, api)
	if s.Labels[secretcache.LabelManagedBy] != secretcache.ManagedBy {
		t.Errorf("Create wrote the connection Secret with labels %v, want %s=%s (else the provider's cache never holds it)", s.Labels, secretcache.LabelManagedBy, secretcache.ManagedBy)
	}
	delete(s.Labels, secretcache.LabelManagedBy)
	if err := api.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	keys := len(f.Server.Issued())

	e = &external{api: f.Client, kube: secretcache.SecretsPastTheCache(controllertest.CachedSecrets(api.(client.WithWatch), secretcache.LabelManagedBy, secretcache.ManagedBy), api), reader: api, record: rec, adopter: extclient.Adopter{Record: rec}}
	o, err := e.Observe(t.Context(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Reason == ReasonWebhookSecretLost || !o.ResourceExists || len(o.ConnectionDetails) == 0 {
		t.Errorf("an unmarked Secret outside the cache: exists %t, %d connection details, Ready %s %q; want the integration and its key found", o.ResourceExists, len(o.ConnectionDetails), c.Reason, c.Message)
	}
	for _, ev := range rec.Events {
		if ev.Type == "Warning" {
			t.Errorf("Warning %s: %s", ev.Reason, ev.Message)
		}
	}
	if n := len(f.Server.Issued()); n != keys {
		t.Errorf("%d keys issued after Observe, want %d: a key rotated for a Secret that was there", n, keys)
	}
}
