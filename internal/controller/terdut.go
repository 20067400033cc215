// Package controller sets up every controller of the provider.
package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"git.ryuvia.com/niklas/provider-terdut/internal/controller/config"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/deadmanswitch"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/escalationpolicy"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/generic"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/integration"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/serviceaccount"
	"git.ryuvia.com/niklas/provider-terdut/internal/controller/team"
)

// Setup adds every controller of the provider to mgr.
func Setup(mgr ctrl.Manager, o generic.Options) error {
	for _, setup := range []func(ctrl.Manager, generic.Options) error{
		config.Setup,
		team.Setup,
		escalationpolicy.Setup,
		deadmanswitch.Setup,
		integration.Setup,
		serviceaccount.Setup,
	} {
		if err := setup(mgr, o); err != nil {
			return err
		}
	}
	return nil
}
