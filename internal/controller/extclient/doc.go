// Package extclient holds what every kind's external client shares, and
// nothing that knows how a kind is set up: external names as server IDs and
// the conditions an MR shows (external.go); adopting an object found by its
// natural key instead of making a second one, and finding what a create whose
// answer was lost made (adopt.go); waiting out an object's absence before it
// counts as gone, since a list can omit what exists (absence.go); the marks a
// create leaves on its MR before it POSTs (attempt.go); and the refusals a
// Create returns with the reason the user reads (refusal.go).
package extclient
