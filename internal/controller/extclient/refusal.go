package extclient

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// ReasonResourceNotOwned is the reason of a refusal: the server object is
// managed by another MR.
const ReasonResourceNotOwned xpv2.ConditionReason = "ResourceNotOwned"

// ErrTeamUnknown says that a child's team is not resolved yet.
const ErrTeamUnknown = "spec.forProvider.teamId is not resolved yet: the team reference is not ready"

// A refusalError keeps, as a Ready condition, why nothing was done.
type refusalError struct {
	error

	cond xpv2.Condition
}

// Condition is the refusal as the Ready condition users see.
func (r refusalError) Condition() xpv2.Condition { return r.cond }

// Refuse sets a Ready=False condition with reason and msg on mg and returns
// it as an error that keeps it: a Create that returns it leaves the reason
// on the Ready condition the user sees.
func Refuse(mg resource.Managed, reason xpv2.ConditionReason, msg string) error {
	c := Unavailable(reason, msg)
	Mark(mg, c)
	return refusalError{error: errors.New(msg), cond: c}
}

type notOwnedError struct {
	error

	cond xpv2.Condition
}

// Condition is the refusal as the Ready condition users see.
func (n notOwnedError) Condition() xpv2.Condition { return n.cond }

// IsNotOwned reports whether err is an ownership refusal.
func IsNotOwned(err error) bool {
	var n notOwnedError
	return errors.As(err, &n)
}

// leaveAlone marks a refusal that means "nothing on the server is this MR's".
type leaveAlone interface{ LeaveAlone() }

func (notOwnedError) LeaveAlone() {}

// IsUntouchable reports whether err refuses an MR that has nothing of its own
// on the server: deleting it must touch nothing there.
func IsUntouchable(err error) bool {
	var l leaveAlone
	return errors.As(err, &l)
}

// NotOwned records an ownership refusal on mg and returns it as an error
// (IsNotOwned).
func NotOwned(mg resource.Managed, reason xpv2.ConditionReason, msg string) error {
	c := Unavailable(reason, msg)
	Mark(mg, c)
	return notOwnedError{error: errors.New(msg), cond: c}
}

// leaveAloneError refuses an MR that has nothing of its own on the server.
type leaveAloneError struct{ error }

// Untouchable marks a gate's refusal as one of an MR that has nothing of
// its own on the server: being deleted, it goes without a request.
func Untouchable(err error) error { return leaveAloneError{err} }

func (leaveAloneError) LeaveAlone() {}

// An Adoptable check says whether the MR may take over the server object with
// the supplied ID, found by its natural key or after a 409. Nil allows all.
type Adoptable func(ctx context.Context, id int64) error

// Allowed runs a, allowing everything when a is nil.
func (a Adoptable) Allowed(ctx context.Context, id int64) error {
	if a == nil {
		return nil
	}
	return a(ctx, id)
}
