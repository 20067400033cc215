// Package v1alpha1 holds the platform.terdut.ryuvia.com/v1alpha1 API: the
// composite resources (and their claims) TerdutServer and TerdutTeam. Their
// schemas become the XRDs in package/configuration/apis; the composition
// function decodes them with these types.
// +kubebuilder:object:generate=true
// +groupName=platform.terdut.ryuvia.com
// +versionName=v1alpha1
package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// Package type metadata.
const (
	Group   = "platform.terdut.ryuvia.com"
	Version = "v1alpha1"
)

// SchemeGroupVersion is the group and version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Kinds of the composite resources and their claims.
const (
	XTerdutServerKind = "XTerdutServer"
	TerdutServerKind  = "TerdutServer"
	XTerdutTeamKind   = "XTerdutTeam"
	TerdutTeamKind    = "TerdutTeam"
)
