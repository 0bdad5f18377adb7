// Package telemetry owns what the engine says about itself: the
// OpenTelemetry metric instruments and their recording (metrics.go,
// gauges.go), the spans of triggers and step attempts (tracing.go), the
// log attributes of a step attempt (logging.go) and the once-per-outage
// log of recurring operations that fail (faults.go).
//
// It knows nothing of the engine: its API takes plain values (workflow,
// step, tenant and outcome names, store types) and funcs, so that every
// other part of the engine reports through it without handing it the
// engine. Each type does nothing, at the cost of a nil check, when its
// provider was not configured (a nil *Metrics, a nil *Tracer).
package telemetry
