//go:build generate

// Package apis holds the provider's API types; this file runs their code
// generation: `go generate ./...` from the repository root.
package apis

// Remove the generated CRDs, then write deepcopy methods and CRDs.
//go:generate rm -rf ../package/crds
//go:generate go tool controller-gen object:headerFile=../hack/boilerplate.go.txt paths=./... crd:crdVersions=v1 output:artifacts:config=../package/crds

// Write the crossplane-runtime method sets (resource.Managed and friends).
//go:generate go tool angryjet generate-methodsets --header-file=../hack/boilerplate.go.txt ./...
