// Package workflow holds the order-processing workflow of the orders
// example: orders.yaml declares it (the workflow of the Trellis spec:
// validate, charge or reject, wait out a 24h fraud window, ship,
// finalize), and orders.gen.go is the code trellis generates from it:
// the typed input and outputs, the OrderProcessingSteps interface the
// example implements, and a typed client to run it. orders.mmd is its
// graph, as Mermaid (trellis generate -graph mermaid).
//
// After editing orders.yaml, run go generate ./... to refresh the code.
package workflow

//go:generate go tool trellis generate -graph mermaid orders.yaml
