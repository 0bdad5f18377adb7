// Package v2 is version 2 of the deploy test's workflow, with its
// generated code: what the new worker binary registers.
package v2

//go:generate go run ../../../cmd/trellis generate .
