package main

import (
	"os"
	"strings"
	"testing"
)

// The Configuration package depends on the provider and function packages
// in the registry it is published to, at the version published.
func TestTheConfigurationDependsOnThePublishedPackages(t *testing.T) {
	meta, err := os.ReadFile("../../package/configuration/crossplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := templateDependencies(string(meta), "127.0.0.1:15300/ryuvia/", "v0.0.7")
	for _, want := range []string{
		"provider: 127.0.0.1:15300/ryuvia/provider-terdut\n      version: \">=v0.0.7\"",
		"function: 127.0.0.1:15300/ryuvia/function-terdut\n      version: \">=v0.0.7\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Configuration's crossplane.yaml lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "xpkg.example.com") {
		t.Errorf("the Configuration still depends on xpkg.example.com:\n%s", got)
	}
}
