// Package schedule decides when each managed resource's reconcile runs, so
// that one namespace cannot starve another and a change is never queued
// behind a fleet at rest: a fair queue with a bounded share of workers per
// namespace (fairness.go), a reconcile budget booked per namespace
// (FairReconciler), and polls of resources at rest deferred while changes
// wait (changesfirst.go). A Budget (budget.go) holds a controller's
// settings of all three, and the per-MR backoff cap.
package schedule
