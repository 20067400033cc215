// Package function is the composition function behind the TerdutServer and
// TerdutTeam claims: it renders a claim's spec into the resources it
// composes, decides their readiness from what Crossplane observed, and
// reports the endpoint, the team ID and a summary of what is not ready yet
// back to the claim.
package function

import (
	"context"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	platform "git.ryuvia.com/niklas/provider-terdut/apis/platform/v1alpha1"
)

const (
	errObservedXR = "cannot get the observed composite resource"
	errDesiredXR  = "cannot get the desired composite resource"
	errInput      = "cannot read the function's input"
	errDecode     = "cannot decode the %s's spec"
	errNoClaim    = "%s %q has no claim: create it as a %s in a namespace, whose namespace its resources go to"
	errNamespace  = "the provider namespace %q in the function's input is not a valid namespace name"
)

// Function renders TerdutServer and TerdutTeam composites.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	Log logging.Logger
	// Now is the function's clock; nil is time.Now.
	Now func() time.Time
}

// RunFunction implements the composition function.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, errObservedXR))
		return rsp, nil
	}
	in := &Input{}
	if req.GetInput() != nil {
		if err := request.GetInput(req, in); err != nil {
			response.Fatal(rsp, errors.Wrap(err, errInput))
			return rsp, nil
		}
	}
	if in.ProviderNamespace == "" {
		in.ProviderNamespace = DefaultProviderNamespace
	}
	if len(validation.IsDNS1123Label(in.ProviderNamespace)) > 0 {
		response.Fatal(rsp, errors.Errorf(errNamespace, in.ProviderNamespace))
		return rsp, nil
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
		return rsp, nil
	}

	kind := oxr.Resource.GetKind()
	claim := oxr.Resource.GetClaimReference()
	if claim == nil || claim.Namespace == "" {
		response.Fatal(rsp, errors.Errorf(errNoClaim, kind, oxr.Resource.GetName(), strings.TrimPrefix(kind, "X")))
		return rsp, nil
	}
	log := f.Log.WithValues("xr", oxr.Resource.GetName(), "claim", claim.Namespace+"/"+claim.Name)

	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	out, notReady, status, err := compose(req, rsp, oxr.Resource.Object, kind, claim.Namespace, claim.Name, in, observed, now())
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composed resources"))
		return rsp, nil
	}
	for _, c := range out {
		cd, err := toComposed(c.Object)
		if err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot render %s", c.Name))
			return rsp, nil
		}
		d := &resource.DesiredComposed{Resource: cd, Ready: resource.ReadyTrue}
		if _, waiting := notReady[c.Name]; waiting {
			d.Ready = resource.ReadyFalse
		}
		desired[resource.Name(c.Name)] = d
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}

	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, errDesiredXR))
		return rsp, nil
	}
	if err := dxr.Resource.SetValue("status", status); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the composite's status"))
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, errDesiredXR))
		return rsp, nil
	}
	log.Debug("composed", "resources", len(out), "summary", status["summary"])
	return rsp, nil
}

// compose renders the composite of the given kind, claimed as
// namespace/name: the resources it composes, why those not ready yet are
// not (see readiness), and its status. It sets the server's conditions on
// rsp.
func compose(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, obj map[string]any, kind, namespace, name string, in *Input, observed map[resource.Name]resource.ObservedComposed, now time.Time) ([]Composed, map[string]string, map[string]any, error) {
	switch kind {
	case platform.XTerdutServerKind:
		xr := &platform.XTerdutServer{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, xr); err != nil {
			return nil, nil, nil, errors.Wrapf(err, errDecode, kind)
		}
		n := ServerNames{Namespace: namespace, Name: name, ProviderNamespace: in.ProviderNamespace}
		all := Server(n, &xr.Spec)
		notReady := readiness(all, observed)
		out, held := holdBootstrap(all, observed)
		if held != "" {
			maps.DeleteFunc(notReady, func(name, _ string) bool { return followsBootstrap(name) })
			notReady[NameServiceAccount] = held
		}
		st := ServerStatus(n, &xr.Spec)
		st.ObservedGeneration = xr.GetGeneration()
		st.KeyRotation = ObservedKeyRotation(observed)
		total := len(all)
		if held != "" {
			total = len(out) + 1 // the Usages follow the ServiceAccount
		}
		st.Summary = summarize(total, notReady)
		bootstrapped(rsp, n, notReady, held != "")
		composedCondition(rsp, observed, notReady, held)
		if r := xr.Spec.Database.PostgresClusterRef; r != nil {
			crd, err := databaseReady(req, rsp, n, r)
			if err != nil {
				return nil, nil, nil, err
			}
			if crd {
				if st.Database, err = databaseCredentials(req, rsp, n, xr, observed, now); err != nil {
					return nil, nil, nil, err
				}
			}
		} else {
			dsnReady(rsp, out, notReady)
		}
		status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
		return out, notReady, status, err
	case platform.XTerdutTeamKind:
		xr := &platform.XTerdutTeam{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, xr); err != nil {
			return nil, nil, nil, errors.Wrapf(err, errDecode, kind)
		}
		n := TeamNames{Namespace: namespace, Name: name}
		out := Team(n, &xr.Spec)
		st := TeamStatus(n, &xr.Spec)
		st.ObservedGeneration = xr.GetGeneration()
		st.TeamID = ObservedTeamID(observed)
		server, err := teamServer(req, rsp, n, &xr.Spec, in.ProviderNamespace, &st)
		if err != nil {
			return nil, nil, nil, err
		}
		// NOTE: only a team its server admitted holds the server (its
		// Team holds a team there): a team that names a server that does
		// not admit its namespace has nothing there to delete first, and
		// must not keep the server from being deleted.
		if server != "" && st.TeamID > 0 {
			held, err := teamHoldsServer(req, rsp, n, out, xr.GetName(), server, TeamProviderConfig(n, &xr.Spec).Name, in.ProviderNamespace)
			if err != nil {
				return nil, nil, nil, err
			}
			out = append(out, held...)
		}
		notReady := readiness(out, observed)
		st.Summary = summarize(len(out), notReady)
		composedCondition(rsp, observed, notReady, "")
		status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
		return out, notReady, status, err
	default:
		return nil, nil, nil, errors.Errorf("cannot compose a %s: this function composes %s and %s", kind, platform.XTerdutServerKind, platform.XTerdutTeamKind)
	}
}

// toComposed converts a desired object to the SDK's composed resource.
// NOTE: only what the function has an opinion on may reach Crossplane's
// server-side apply, else it would own (and fight the API server's
// defaulting over) zero values such as a probe's successThreshold: 0. So
// empty and null fields go, and so does status.
func toComposed(o Object) (*composed.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	prune(m)
	return &composed.Unstructured{Unstructured: unstructured.Unstructured{Object: m}}, nil
}

// prune removes null values and empty objects, depth first.
func prune(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(t)
			if len(t) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
