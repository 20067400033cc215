package extclient

import (
	"slices"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Event reasons the provider's controllers emit beyond crossplane-runtime's.
const (
	// ReasonAdopted: Create found the object on the server by its natural
	// key (or after a 409) and took it over instead of creating another.
	ReasonAdopted = "AdoptedExternalResource"
	// ReasonKeyRotated: an integration was made anew (a kind change, or it
	// was gone from the server), with a new URL and key.
	ReasonKeyRotated = "KeyRotated"
	// ReasonRecreated: an object the MR made was gone from the server and
	// was made again, with a new ID.
	ReasonRecreated = "ExternalResourceRecreated"
	// ReasonPredecessorReturned: an object the MR took as gone and made
	// again is on the server again: two objects for one MR.
	ReasonPredecessorReturned = "PredecessorReturned"
)

const msgPredecessor = "%s %d, which this resource took as gone from the server and replaced with %d, is there again: two exist for one resource. Nothing was deleted (the spec did not ask): delete the one you do not want on the server, or import it with a resource of its own"

// Replaced appends old to a list of replaced IDs, keeping the newest ten.
func Replaced(ids []int64, old int64) []int64 {
	out := append(slices.Clone(ids), old)
	return out[max(0, len(out)-10):]
}

// Predecessors warns, on mg, of each replaced ID (what: "integration")
// that ids (the IDs on the server now) holds again; current is the one
// mg manages.
func Predecessors(r event.Recorder, mg resource.Managed, what string, replaced []int64, current int64, onServer func(int64) bool) {
	for _, id := range replaced {
		if id != current && onServer(id) {
			r.Event(mg, event.Warning(ReasonPredecessorReturned, errors.Errorf(msgPredecessor, what, id, current)))
		}
	}
}

const errExternalName = "external-name %q is not a terdut-server ID: set it to the object's numeric ID or remove it"

// ExternalID returns mg's external name as a server ID. ok is false when no
// external name is set yet.
func ExternalID(mg resource.Object) (id int64, ok bool, err error) {
	en := meta.GetExternalName(mg)
	if en == "" {
		return 0, false, nil
	}
	id, err = strconv.ParseInt(en, 10, 64)
	if err != nil || id <= 0 {
		return 0, false, errors.Errorf(errExternalName, en)
	}
	return id, true, nil
}

// SetExternalID records a server ID as mg's external name.
func SetExternalID(mg resource.Object, id int64) {
	meta.SetExternalName(mg, FormatID(id))
}

// Unavailable is a Ready=False condition with a reason users act on.
func Unavailable(reason xpv2.ConditionReason, msg string) xpv2.Condition {
	c := xpv2.Unavailable().WithMessage(msg)
	c.Reason = reason
	return c
}

// Mark sets conditions on mg, each stamped with the generation of mg's
// spec it was written for, so that a reader (kubectl wait, a GitOps health
// check, a test) can tell a condition about the current spec from one
// written before the spec changed.
func Mark(mg resource.Managed, c ...xpv2.Condition) {
	for i := range c {
		c[i].ObservedGeneration = mg.GetGeneration()
	}
	mg.SetConditions(c...)
}

// FormatID renders a server ID as an external name.
func FormatID(id int64) string { return strconv.FormatInt(id, 10) }

// TeamID returns the team a child MR belongs to: spec.forProvider.teamId
// once resolved, else the team last observed (a child being deleted does not
// resolve its references again).
func TeamID(spec *int64, observed int64) (int64, error) {
	switch {
	case spec != nil:
		return *spec, nil
	case observed != 0:
		return observed, nil
	default:
		return 0, errors.New(ErrTeamUnknown)
	}
}

// KnownTeam returns a child's team ID once it is known (resolved in the spec,
// or last observed).
func KnownTeam(spec *int64, observed int64) (int64, bool) {
	id, err := TeamID(spec, observed)
	return id, err == nil
}

// SameDuration reports whether two Go duration strings are the same
// duration ("5m" and "5m0s"); unparseable ones compare as strings.
func SameDuration(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return da == db
}
