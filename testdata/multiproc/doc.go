// Package multiproc holds the workflows of the Postgres store's
// multi-process tests (runtime/store/pgstore/multiproc_test.go), with
// their generated code.
package multiproc

//go:generate go run ../../cmd/trellis generate .
