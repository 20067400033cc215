//go:build generate

// Package apis holds the provider's API types; this file runs their code
// generation: `go generate ./...` from the repository root.
package apis

// Remove the generated CRDs, then write deepcopy methods and CRDs.
//go:generate rm -rf ../package/provider/crds ../_output/platform-crds
//go:generate go tool controller-gen object:headerFile=../hack/boilerplate.go.txt paths=./v1alpha1/... crd:crdVersions=v1 output:artifacts:config=../package/provider/crds

// Write the crossplane-runtime method sets (resource.Managed and friends).
//go:generate go tool angryjet generate-methodsets --header-file=../hack/boilerplate.go.txt ./v1alpha1/...

// The composite resources: deepcopy, then their XRDs (with claim names) for
// the Configuration package, from the CRDs controller-gen writes for them.
//go:generate go tool controller-gen object:headerFile=../hack/boilerplate.go.txt paths=./platform/... crd:crdVersions=v1 output:artifacts:config=../_output/platform-crds
//go:generate go run ../internal/tools/xrdgen -in ../_output/platform-crds -out ../package/configuration/apis
