package function

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultProviderNamespace is where the provider runs unless the
// Composition's input says otherwise.
const DefaultProviderNamespace = "crossplane-system"

// Input is the function's input in a Composition step:
//
//	input:
//	  apiVersion: function.terdut.ryuvia.com/v1alpha1
//	  kind: Input
//	  providerNamespace: crossplane-system
type Input struct {
	metav1.TypeMeta `json:",inline"`

	// ProviderNamespace is the namespace the provider runs in: the
	// bootstrap ServiceAccount and the instance key's Secret live there
	// (always the provider's own namespace).
	ProviderNamespace string `json:"providerNamespace,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (in *Input) DeepCopyObject() runtime.Object {
	out := *in
	return &out
}
