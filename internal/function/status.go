package function

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	xpresource "github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	protection "github.com/crossplane/crossplane/apis/v2/protection/v1beta1"
	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
)

// TypeBootstrapped is the server claim's condition that the provider holds
// an instance key for the server.
const TypeBootstrapped = "Bootstrapped"

// ReasonWaitingForReadyReplica is the Bootstrapped condition's reason while
// the bootstrap ServiceAccount is held back (holdBootstrap).
const ReasonWaitingForReadyReplica = "WaitingForReadyReplica"

// bootstrapped sets the Bootstrapped condition on the composite and its
// claim from the bootstrap ServiceAccount's readiness; held: it is not
// composed yet, for want of a ready replica.
func bootstrapped(rsp *fnv1.RunFunctionResponse, n ServerNames, notReady map[string]string, held bool) {
	if why, waiting := notReady[NameServiceAccount]; waiting {
		reason := "Waiting"
		if held {
			reason = ReasonWaitingForReadyReplica
		}
		response.ConditionFalse(rsp, TypeBootstrapped, reason).WithMessage(why).TargetCompositeAndClaim()
		return
	}
	response.ConditionTrue(rsp, TypeBootstrapped, "Available").
		WithMessage(fmt.Sprintf("the provider holds an instance key in Secret %s/%s", n.ProviderNamespace, n.CredentialsSecret())).
		TargetCompositeAndClaim()
}

// TypeDatabaseReady is the server claim's condition that its database is
// there: a Zalando postgres-operator cluster that runs, or,
// for a dsn of the owner's own, terdut-server's readiness probe (which
// reaches the database) passing.
const TypeDatabaseReady = "DatabaseReady"

// requiredPostgres names the Zalando cluster among the required resources,
// requiredPostgresCRD the CRD that defines it.
const (
	requiredPostgres    = "postgres-cluster"
	requiredPostgresCRD = "postgres-crd"
	// PostgresCRDName is postgres-operator's CRD of postgresql clusters.
	PostgresCRDName = "postgresqls.acid.zalan.do"
)

// databaseReady asks Crossplane for the claim's postgresql cluster and sets
// DatabaseReady from its status (PostgresClusterStatus "Running"). It asks
// for postgres-operator's CRD first: without it a postgresql cannot be read
// at all, and the claim says so instead of failing to compose (the CRD is
// optional).
func databaseReady(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, n ServerNames, r *platform.PostgresClusterRef) (crdInstalled bool, err error) {
	ns := n.Namespace
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{requiredPostgresCRD: {
		ApiVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition",
		Match: &fnv1.ResourceSelector_MatchName{MatchName: PostgresCRDName},
	}}}
	what := fmt.Sprintf("postgresql %s/%s", ns, r.Name)
	crd, resolved, err := request.GetRequiredResource(req, requiredPostgresCRD)
	switch {
	case err != nil:
		return false, errors.Wrapf(err, "cannot read CustomResourceDefinition %s", PostgresCRDName)
	case !resolved:
		response.ConditionUnknown(rsp, TypeDatabaseReady, "Waiting").WithMessage("reading " + what).TargetCompositeAndClaim()
		return false, nil
	case len(crd) == 0:
		response.ConditionFalse(rsp, TypeDatabaseReady, "PostgresOperatorNotInstalled").
			WithMessage(fmt.Sprintf("database.postgresClusterRef names %s, but the CRD %s is not installed: install Zalando's postgres-operator, or use database.dsn", what, PostgresCRDName)).
			TargetCompositeAndClaim()
		return false, nil
	}
	rsp.Requirements.Resources[requiredPostgres] = &fnv1.ResourceSelector{
		ApiVersion: "acid.zalan.do/v1", Kind: "postgresql", Namespace: &ns,
		Match: &fnv1.ResourceSelector_MatchName{MatchName: r.Name},
	}
	found, resolved, err := request.GetRequiredResource(req, requiredPostgres)
	switch {
	case err != nil:
		return true, errors.Wrapf(err, "cannot read %s", what)
	case !resolved:
		response.ConditionUnknown(rsp, TypeDatabaseReady, "Waiting").WithMessage("reading " + what).TargetCompositeAndClaim()
	case len(found) == 0:
		response.ConditionFalse(rsp, TypeDatabaseReady, "NotFound").
			WithMessage(what + " does not exist: create the cluster, or fix database.postgresClusterRef").TargetCompositeAndClaim()
	default:
		phase, _, _ := unstructured.NestedString(found[0].Resource.Object, "status", "PostgresClusterStatus")
		if phase == "Running" {
			response.ConditionTrue(rsp, TypeDatabaseReady, "Running").WithMessage(what + " is Running").TargetCompositeAndClaim()
			return true, nil
		}
		if phase == "" {
			phase = "unknown"
		}
		response.ConditionFalse(rsp, TypeDatabaseReady, "ClusterNotRunning").
			WithMessage(fmt.Sprintf("%s is %s", what, phase)).TargetCompositeAndClaim()
	}
	return true, nil
}

// dsnReady sets DatabaseReady for a database the owner brings (a dsn): the
// function cannot reach it, terdut-server's readiness probe does, so the
// condition follows the Deployment's availability.
func dsnReady(rsp *fnv1.RunFunctionResponse, out []Composed, notReady map[string]string) {
	for _, c := range out {
		d, ok := c.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		what := "Deployment " + d.Namespace + "/" + d.Name
		if why, waiting := notReady[c.Name]; waiting {
			response.ConditionUnknown(rsp, TypeDatabaseReady, "WaitingForServer").
				WithMessage("the database at database.dsn is checked by terdut-server's readiness probe; " + why).TargetCompositeAndClaim()
			return
		}
		response.ConditionTrue(rsp, TypeDatabaseReady, "ServerReady").
			WithMessage("terdut-server's readiness probe reaches the database at database.dsn (" + what + " is Available)").TargetCompositeAndClaim()
		return
	}
}

// ObservedTeamID is the server-side ID of the composed Team, once its
// provider has created it; 0 before.
func ObservedTeamID(observed map[resource.Name]resource.ObservedComposed) int64 {
	oc, ok := observed[NameTeam]
	if !ok || oc.Resource == nil {
		return 0
	}
	id, err := oc.Resource.GetInteger("status.atProvider.id")
	if err != nil {
		return 0
	}
	return id
}

// Ready reports whether a composed resource is ready, and if not, why: a
// Deployment when Available, a managed resource when Ready (a provider
// config has no readiness), anything else once it exists.
func Ready(c Composed, observed map[resource.Name]resource.ObservedComposed) (bool, string) {
	oc, ok := observed[resource.Name(c.Name)]
	if !ok || oc.Resource == nil {
		return false, "not created yet"
	}
	switch c.Object.(type) {
	case *appsv1.Deployment:
		return condition(oc.Resource, "Available")
	case *protection.Usage, *protection.ClusterUsage:
		// NOTE: Crossplane marks a Usage Ready once what it holds is
		// labelled in use and its user exists.
		return condition(oc.Resource, string(xpv2.TypeReady))
	case xpresource.Managed:
		// NOTE: a managed resource that cannot sync says why in Synced
		// (RefNotPermitted, TeamNotInNamespace, ...); that is the more
		// useful reason while Ready is still False.
		if s := oc.Resource.GetCondition(xpv2.TypeSynced); s.Status == corev1.ConditionFalse {
			return false, describe("Synced", s)
		}
		return condition(oc.Resource, string(xpv2.TypeReady))
	default:
		return true, ""
	}
}

func condition(u *composed.Unstructured, typ string) (bool, string) {
	c := u.GetCondition(xpv2.ConditionType(typ))
	if c.Status == corev1.ConditionTrue {
		return true, ""
	}
	return false, describe(typ, c)
}

// maxMessage bounds a condition message quoted in a summary.
const maxMessage = 200

func describe(typ string, c xpv2.Condition) string {
	s := fmt.Sprintf("%s=%s", typ, c.Status)
	if c.Status == "" {
		s = typ + "=Unknown"
	}
	if c.Reason != "" {
		s += " " + string(c.Reason)
	}
	if m := c.Message; m != "" {
		if len(m) > maxMessage {
			m = m[:maxMessage] + "..."
		}
		s += ": " + m
	}
	return s
}

// readiness maps each composed resource that is not ready yet to why not,
// as "Kind namespace/name: reason".
func readiness(out []Composed, observed map[resource.Name]resource.ObservedComposed) map[string]string {
	notReady := map[string]string{}
	for _, c := range out {
		if ok, why := Ready(c, observed); !ok {
			notReady[c.Name] = describeObject(c.Object) + ": " + why
		}
	}
	return notReady
}

// summarize says which of total composed resources are not ready yet and
// why, or that all are.
func summarize(total int, notReady map[string]string) string {
	if len(notReady) == 0 {
		if total == 1 {
			return "1 resource ready"
		}
		return fmt.Sprintf("all %d resources ready", total)
	}
	waiting := slices.Sorted(maps.Values(notReady))
	return fmt.Sprintf("%d of %s not ready: %s", len(waiting), resources(total), strings.Join(waiting, "; "))
}

func resources(n int) string {
	if n == 1 {
		return "1 resource"
	}
	return fmt.Sprintf("%d resources", n)
}

// describeObject is "Kind namespace/name" (or "Kind name").
func describeObject(o Object) string {
	n := o.GetName()
	if o.GetNamespace() != "" {
		n = o.GetNamespace() + "/" + n
	}
	return o.GetObjectKind().GroupVersionKind().Kind + " " + n
}

// holdBootstrap leaves the bootstrap ServiceAccount (and the Usages it is
// the user of) out of what is composed until the server's Deployment has a ready replica (call
// /api/bootstrap only once one is ready), and says why. A ServiceAccount
// composed already stays, whatever the Deployment does (a rollout has no
// ready replica for a while): leaving it out then would delete the server's
// instance account and its key.
func holdBootstrap(out []Composed, observed map[resource.Name]resource.ObservedComposed) ([]Composed, string) {
	if oc, ok := observed[NameServiceAccount]; ok && oc.Resource != nil {
		return out, ""
	}
	var dep *appsv1.Deployment
	for _, c := range out {
		if d, ok := c.Object.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	if dep == nil {
		return out, ""
	}
	ready, want := int64(0), int64(1)
	if dep.Spec.Replicas != nil {
		want = int64(*dep.Spec.Replicas)
	}
	if oc, ok := observed[NameDeployment]; ok && oc.Resource != nil {
		ready, _ = oc.Resource.GetInteger("status.readyReplicas")
	}
	if ready >= 1 {
		return out, ""
	}
	kept := make([]Composed, 0, len(out))
	var sa Object
	for _, c := range out {
		if c.Name == NameServiceAccount {
			sa = c.Object
		}
		if followsBootstrap(c.Name) {
			continue
		}
		kept = append(kept, c)
	}
	if sa == nil {
		return out, ""
	}
	why := fmt.Sprintf("%s: not created until Deployment %s/%s has a ready replica (%d of %d ready), so /api/bootstrap is not called before the server runs",
		describeObject(sa), dep.Namespace, dep.Name, ready, want)
	if want == 0 {
		why = fmt.Sprintf("%s: not created while replicas is 0 (Deployment %s/%s): /api/bootstrap needs a running server",
			describeObject(sa), dep.Namespace, dep.Name)
	}
	return kept, why
}

// TypeComposed is the claim's condition that says which composed resource
// holds it back, with that resource's own reason (RefNotPermitted,
// UnknownUser, WebhookSecretLost, WaitingForReadyReplica, ...), so that an
// owner reads it in `kubectl describe` and `kubectl wait`, not only in the
// summary.
const TypeComposed = "Composed"

// generic is whether a condition reason says nothing of its own: the other
// condition's reason is the more useful one.
func generic(reason xpv2.ConditionReason) bool {
	return slices.Contains([]xpv2.ConditionReason{"", xpv2.ReasonCreating, xpv2.ReasonUnavailable, xpv2.ReasonReconcileError, xpv2.ReasonReconcileSuccess}, reason)
}

// holdBack is the reason and message of the first composed resource (by
// name) that is not ready, and whether it is failing (Synced=False) rather
// than on its way.
func holdBack(observed map[resource.Name]resource.ObservedComposed, notReady map[string]string, held string) (reason, msg string, failing bool) {
	// NOTE: a team before its children: a child that cannot resolve its
	// reference to a refused Team fails as a consequence; the Team's own
	// reason (RefNotPermitted, say) is the cause the owner acts on.
	names := slices.SortedFunc(maps.Keys(notReady), func(a, b string) int {
		if ta, tb := a == NameTeam, b == NameTeam; ta != tb {
			if ta {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(names) == 0 {
		return "", "", false
	}
	// A failing resource first: it needs the owner, the others only time.
	type cand struct {
		reason, msg string
		failing     bool
	}
	var first *cand
	for _, name := range names {
		c := cand{reason: "NotCreated", msg: notReady[name]}
		if name == NameServiceAccount && held != "" {
			c.reason = ReasonWaitingForReadyReplica
		} else if oc, ok := observed[resource.Name(name)]; ok && oc.Resource != nil {
			ready := oc.Resource.GetCondition(xpv2.TypeReady)
			synced := oc.Resource.GetCondition(xpv2.TypeSynced)
			avail := oc.Resource.GetCondition("Available")
			switch {
			case ready.Status == corev1.ConditionFalse && !generic(ready.Reason):
				c.reason = string(ready.Reason)
			case synced.Status == corev1.ConditionFalse && !generic(synced.Reason):
				c.reason = string(synced.Reason)
			case avail.Status == corev1.ConditionFalse && avail.Reason != "":
				c.reason = string(avail.Reason)
			case ready.Reason != "":
				c.reason = string(ready.Reason)
			default:
				c.reason = "NotReady"
			}
			c.failing = synced.Status == corev1.ConditionFalse
		}
		if c.failing {
			return c.reason, c.msg, true
		}
		if first == nil {
			first = &c
		}
	}
	return first.reason, first.msg, false
}

// composedCondition sets the Composed condition on the composite and its
// claim, and for a failing resource a warning event with its reason.
func composedCondition(rsp *fnv1.RunFunctionResponse, observed map[resource.Name]resource.ObservedComposed, notReady map[string]string, held string) {
	reason, msg, failing := holdBack(observed, notReady, held)
	if reason == "" {
		response.ConditionTrue(rsp, TypeComposed, "AllReady").WithMessage("every composed resource is ready").TargetCompositeAndClaim()
		return
	}
	response.ConditionFalse(rsp, TypeComposed, reason).WithMessage(msg).TargetCompositeAndClaim()
	if failing {
		response.Warning(rsp, errors.New(msg)).WithReason(reason).TargetCompositeAndClaim()
	}
}

// TypeDatabaseCredentials is the server claim's condition that its pods use
// the Zalando cluster's current password: postgres-operator may rotate the
// credentials Secret, and a pod reads PGPASSWORD only when it starts (a
// rotation is detected and reported; restarting on it is left to the owner).
const TypeDatabaseCredentials = "DatabaseCredentials"

// requiredCredentials names the credentials Secret among the required
// resources.
const requiredCredentials = "postgres-credentials"

// databaseCredentials asks for the cluster's credentials Secret and tells,
// from what the composite recorded of it, whether it changed since the
// server's pods started. It returns what to record now.
func databaseCredentials(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, n ServerNames, xr *platform.XTerdutServer, observed map[resource.Name]resource.ObservedComposed, now time.Time) (*platform.ServerDatabaseStatus, error) {
	_, name, _ := Database(n, &xr.Spec.Database)
	ns := n.Namespace
	rsp.Requirements.Resources[requiredCredentials] = &fnv1.ResourceSelector{
		ApiVersion: "v1", Kind: "Secret", Namespace: &ns,
		Match: &fnv1.ResourceSelector_MatchName{MatchName: name},
	}
	prev := xr.Status.Database
	what := "Secret " + ns + "/" + name
	found, resolved, err := request.GetRequiredResource(req, requiredCredentials)
	switch {
	case err != nil:
		return prev, errors.Wrapf(err, "cannot read %s", what)
	case !resolved:
		return prev, nil
	case len(found) == 0:
		response.ConditionFalse(rsp, TypeDatabaseCredentials, "SecretNotFound").
			WithMessage(what + " does not exist yet: postgres-operator writes it for the user of database.postgresClusterRef once the cluster runs").TargetCompositeAndClaim()
		return prev, nil
	}
	data, _, _ := unstructured.NestedMap(found[0].Resource.Object, "data")
	h := sha256.New()
	h.Write([]byte(xr.GetUID()))
	for _, k := range slices.Sorted(maps.Keys(data)) {
		v, _ := data[k].(string)
		_, _ = fmt.Fprintf(h, "\x00%s\x00%s", k, v)
	}
	fp := hex.EncodeToString(h.Sum(nil)[:8])

	gen, rolledOut := int64(0), false
	if oc, ok := observed[NameDeployment]; ok && oc.Resource != nil {
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(oc.Resource.Object, d); err == nil {
			want := ptr.Deref(d.Spec.Replicas, 1)
			gen = d.Generation
			rolledOut = d.Status.ObservedGeneration >= gen && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want && d.Status.Replicas == want
		}
	}
	st := &platform.ServerDatabaseStatus{CredentialsSecret: name, CredentialsFingerprint: fp}
	switch {
	case prev == nil || prev.CredentialsSecret != name || prev.CredentialsFingerprint == "":
		// First sight: whatever the pods read when they started is this.
	case prev.CredentialsFingerprint != fp:
		t := metav1.NewTime(now)
		st.CredentialsChangedAt, st.ChangedAtGeneration = &t, gen
	default:
		st.CredentialsChangedAt, st.ChangedAtGeneration = prev.CredentialsChangedAt, prev.ChangedAtGeneration
	}
	if st.CredentialsChangedAt != nil && (gen <= st.ChangedAtGeneration || !rolledOut) {
		msg := fmt.Sprintf("%s changed at %s, after the server's pods started: they use the old password until they restart "+
			"(kubectl -n %s rollout restart deployment/%s)", what, st.CredentialsChangedAt.UTC().Format(time.RFC3339), ns, n.Name)
		if gen > st.ChangedAtGeneration {
			msg = fmt.Sprintf("%s changed at %s; the Deployment is rolling out its pods with the new password", what, st.CredentialsChangedAt.UTC().Format(time.RFC3339))
		}
		response.ConditionFalse(rsp, TypeDatabaseCredentials, "CredentialsRotated").WithMessage(msg).TargetCompositeAndClaim()
		response.Warning(rsp, errors.New(msg)).WithReason("CredentialsRotated").TargetCompositeAndClaim()
		return st, nil
	}
	// The pods started after the change (or no change was seen): forget it.
	st.CredentialsChangedAt, st.ChangedAtGeneration = nil, 0
	response.ConditionTrue(rsp, TypeDatabaseCredentials, "Current").
		WithMessage("the server's pods started with the current content of " + what).TargetCompositeAndClaim()
	return st, nil
}
