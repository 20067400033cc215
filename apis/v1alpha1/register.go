// Package v1alpha1 holds the terdut.ryuvia.com/v1alpha1 API: the provider
// configs and the managed resources for terdut-server.
// +kubebuilder:object:generate=true
// +groupName=terdut.ryuvia.com
// +versionName=v1alpha1
package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "terdut.ryuvia.com"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group and version of this package.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder registers the package's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds the package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind metadata, one set per kind.
var (
	ProviderConfigKind                      = reflect.TypeFor[ProviderConfig]().Name()
	ProviderConfigGroupKind                 = schema.GroupKind{Group: Group, Kind: ProviderConfigKind}.String()
	ProviderConfigGroupVersionKind          = SchemeGroupVersion.WithKind(ProviderConfigKind)
	ClusterProviderConfigKind               = reflect.TypeFor[ClusterProviderConfig]().Name()
	ClusterProviderConfigGroupKind          = schema.GroupKind{Group: Group, Kind: ClusterProviderConfigKind}.String()
	ClusterProviderConfigGroupVersionKind   = SchemeGroupVersion.WithKind(ClusterProviderConfigKind)
	ProviderConfigUsageGroupVersionKind     = SchemeGroupVersion.WithKind(reflect.TypeFor[ProviderConfigUsage]().Name())
	ProviderConfigUsageListGroupVersionKind = SchemeGroupVersion.WithKind(reflect.TypeFor[ProviderConfigUsageList]().Name())

	TeamKind                         = reflect.TypeFor[Team]().Name()
	TeamGroupKind                    = schema.GroupKind{Group: Group, Kind: TeamKind}.String()
	TeamGroupVersionKind             = SchemeGroupVersion.WithKind(TeamKind)
	EscalationPolicyKind             = reflect.TypeFor[EscalationPolicy]().Name()
	EscalationPolicyGroupKind        = schema.GroupKind{Group: Group, Kind: EscalationPolicyKind}.String()
	EscalationPolicyGroupVersionKind = SchemeGroupVersion.WithKind(EscalationPolicyKind)
	DeadmanSwitchKind                = reflect.TypeFor[DeadmanSwitch]().Name()
	DeadmanSwitchGroupKind           = schema.GroupKind{Group: Group, Kind: DeadmanSwitchKind}.String()
	DeadmanSwitchGroupVersionKind    = SchemeGroupVersion.WithKind(DeadmanSwitchKind)
	IntegrationKind                  = reflect.TypeFor[Integration]().Name()
	IntegrationGroupKind             = schema.GroupKind{Group: Group, Kind: IntegrationKind}.String()
	IntegrationGroupVersionKind      = SchemeGroupVersion.WithKind(IntegrationKind)
	ServiceAccountKind               = reflect.TypeFor[ServiceAccount]().Name()
	ServiceAccountGroupKind          = schema.GroupKind{Group: Group, Kind: ServiceAccountKind}.String()
	ServiceAccountGroupVersionKind   = SchemeGroupVersion.WithKind(ServiceAccountKind)
)

func init() {
	SchemeBuilder.Register(
		&ProviderConfig{}, &ProviderConfigList{},
		&ClusterProviderConfig{}, &ClusterProviderConfigList{},
		&ProviderConfigUsage{}, &ProviderConfigUsageList{},
		&Team{}, &TeamList{},
		&EscalationPolicy{}, &EscalationPolicyList{},
		&DeadmanSwitch{}, &DeadmanSwitchList{},
		&Integration{}, &IntegrationList{},
		&ServiceAccount{}, &ServiceAccountList{},
	)
}
