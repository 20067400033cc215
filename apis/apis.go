// Package apis holds the provider's API types.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
)

// AddToScheme adds every API type of the provider to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	return v1alpha1.AddToScheme(s)
}
