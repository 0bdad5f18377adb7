// Package v1 is version 1 of the deploy test's workflow, with its
// generated code: what the old worker binary registers, and what the new
// one keeps as a former version.
package v1

//go:generate go run ../../../cmd/trellis generate .
