// Package workflow holds the fulfilment workflow and the shipment
// workflow it starts as a child.
package workflow

//go:generate go tool trellis generate -graph mermaid fulfilment.yaml shipment.yaml
