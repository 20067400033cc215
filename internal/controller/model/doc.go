// Package model holds the model-based test of the external clients: a
// numbered, reproducible random walk of spec changes, crashes and server
// faults, checked after every step (model_test.go). `make test` runs a
// short budget; `make chaos-model WALK=... STEPS=...` runs long walks.
package model
