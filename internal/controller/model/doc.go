// Package model holds the model-based test of the external clients: a
// seeded, reproducible random walk of spec changes, crashes and server
// faults, checked after every step (model_test.go, build tag "model").
// `make chaos-model SEED=... STEPS=...` runs it.
package model
