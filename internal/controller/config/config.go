// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it
// counts their users and blocks their deletion while they are in use.
package config

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"git.ryuvia.com/niklas/provider-terdut/apis/v1alpha1"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
)

// Setup adds the ProviderConfig and ClusterProviderConfig controllers.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	for _, k := range []struct {
		groupKind string
		kind      string
		config    resource.ProviderConfigKinds
		object    resource.ProviderConfig
	}{
		{v1alpha1.ProviderConfigGroupKind, v1alpha1.ProviderConfigKind, kinds(v1alpha1.ProviderConfigGroupVersionKind.Kind), &v1alpha1.ProviderConfig{}},
		{v1alpha1.ClusterProviderConfigGroupKind, v1alpha1.ClusterProviderConfigKind, kinds(v1alpha1.ClusterProviderConfigGroupVersionKind.Kind), &v1alpha1.ClusterProviderConfig{}},
	} {
		name := providerconfig.ControllerName(k.groupKind)
		r := providerconfig.NewReconciler(mgr, k.config,
			providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
			providerconfig.WithRecorder(generic.NewRecorder(mgr, name)))
		err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			WithOptions(o.ForControllerRuntime()).
			For(k.object).
			Watches(&v1alpha1.ProviderConfigUsage{}, &resource.EnqueueRequestForProviderConfig{Kind: k.kind}).
			Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
		if err != nil {
			return err
		}
	}
	return nil
}

// kinds are the provider config kinds for one config kind: both kinds share
// the namespaced ProviderConfigUsage, which lives beside the managed resource.
func kinds(kind string) resource.ProviderConfigKinds {
	return resource.ProviderConfigKinds{
		Config:    v1alpha1.SchemeGroupVersion.WithKind(kind),
		Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
		UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
	}
}
