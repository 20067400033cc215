package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func crd(kind, plural string) *extv1.CustomResourceDefinition {
	return &extv1.CustomResourceDefinition{Spec: extv1.CustomResourceDefinitionSpec{
		Group: "platform.terdut.ryuvia.com",
		Names: extv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural},
		Versions: []extv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Schema: &extv1.CustomResourceValidation{
			OpenAPIV3Schema: &extv1.JSONSchemaProps{Type: "object", Properties: map[string]extv1.JSONSchemaProps{
				"apiVersion": {Type: "string"},
				"metadata":   {Type: "object"},
				"spec":       {Type: "object", Properties: map[string]extv1.JSONSchemaProps{"displayName": {Type: "string"}}},
				"status":     {Type: "object"},
			}},
		}}},
	}}
}

func TestToXRD(t *testing.T) {
	x, err := toXRD(crd("XTerdutTeam", "xterdutteams"))
	if err != nil {
		t.Fatal(err)
	}
	spec := x["spec"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"kind": "TerdutTeam", "plural": "terdutteams", "categories": []string{"claim", "terdut"}}, spec["claimNames"]); diff != "" {
		t.Errorf("claimNames: -want, +got:\n%s", diff)
	}
	v := spec["versions"].([]any)[0].(map[string]any)
	schema := v["schema"].(map[string]any)["openAPIV3Schema"].(extv1.JSONSchemaProps)
	props := make([]string, 0, len(schema.Properties))
	for p := range schema.Properties {
		props = append(props, p)
	}
	if len(props) != 2 || schema.Properties["spec"].Properties["displayName"].Type != "string" {
		t.Errorf("schema properties %v: want only spec (with its fields) and status; Crossplane owns the rest", props)
	}
	if x["metadata"].(map[string]any)["name"] != "xterdutteams.platform.terdut.ryuvia.com" {
		t.Errorf("XRD name %v", x["metadata"])
	}

	if _, err := toXRD(crd("TerdutTeam", "terdutteams")); err == nil {
		t.Error("a composite kind without the X prefix (no claim name to derive) was accepted")
	}
}
