// Package acceptance holds the workflows the runtime's acceptance tests
// run (runtime/acceptance_test.go), with their generated code: one per
// shape of DAG (chain, diamond, fan-out and fan-in, branches with cascade
// and merge, sleeps), one whose input picks a failure mode, and one whose
// input picks a step's output, valid or not (grades).
package acceptance

//go:generate go run ../../cmd/trellis generate .
