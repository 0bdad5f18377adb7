package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/effectivelabs/trellis/runtime/clock"
)

// How a run is traced. Each trigger (Trigger, TriggerMany, Run) makes a
// span, "trellis.trigger <workflow>", of kind producer, a child of the
// span in the caller's context if there is one: a run started inside an
// HTTP handler belongs to the request's trace. Its span context is
// stored with each run the trigger created, as W3C Trace Context headers
// (traceparent, tracestate), one "name: value" line each. Each attempt of
// a step's code, in whichever process claims it, then makes a span
// "trellis.step <workflow>/<step>", of kind consumer, a child of that
// trigger span; the step's code gets it in its context, so the spans it
// starts nest below it.
//
// A run triggered by an engine without a TracerProvider (or before this
// was added) has no stored context: each of its step attempts is then the
// root of a trace of its own. Skipped steps, sleeps and wake-ups run no
// code and make no span.

// Tracer starts the engine's spans, stamped by the engine's clock; a nil
// *Tracer starts none.
type Tracer struct {
	tracer trace.Tracer
	clock  clock.Clock
}

// NewTracer returns the tracer of tp, or nil when tp is nil.
func NewTracer(tp trace.TracerProvider, c clock.Clock) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{tracer: tp.Tracer(InstrumentationName), clock: c}
}

// StartTrigger starts the span of a trigger and returns its context and
// the trace context to store with the runs it creates. Without a tracer
// it returns ctx, no span and no trace context. The span carries the
// runs' tags, all of them: a run has few, and spans are not aggregated.
func (t *Tracer) StartTrigger(ctx context.Context, workflow, tenant string, runs int, tags map[string]string) (context.Context, trace.Span, string) {
	if t == nil {
		return ctx, nil, ""
	}
	attrs := append([]attribute.KeyValue{attrWorkflow.String(workflow), attrTenant.String(tenant), attrRunCount.Int(runs)}, TagAttributes(tags, nil)...)
	ctx, span := t.tracer.Start(ctx, "trellis.trigger "+workflow,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(t.clock.Now()),
		trace.WithAttributes(attrs...))
	return ctx, span, encodeTraceContext(ctx)
}

// EndTrigger ends a trigger's span, with the id of the run it made when
// it made one (run is empty otherwise), or the error when it failed.
func (t *Tracer) EndTrigger(span trace.Span, run string, err error) {
	if span == nil {
		return
	}
	if run != "" {
		span.SetAttributes(attrRunID.String(run))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(t.clock.Now()))
}

// encodeTraceContext writes the span context of ctx as W3C Trace Context
// headers, one "name: value" line each (traceparent, then tracestate
// when there is one): what a run stores. Empty when ctx has no valid
// span context.
func encodeTraceContext(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	lines := make([]string, 0, len(carrier))
	for _, k := range (propagation.TraceContext{}).Fields() { // in a fixed order
		if v := carrier.Get(k); v != "" {
			lines = append(lines, k+": "+v)
		}
	}
	return strings.Join(lines, "\n")
}

// withTraceContext returns ctx carrying the remote span context a run
// stored, and whether there was a valid one. It reads the stored headers
// in place: every step attempt does this.
func withTraceContext(ctx context.Context, stored string) (context.Context, bool) {
	if stored == "" {
		return ctx, false
	}
	ctx = propagation.TraceContext{}.Extract(ctx, headerLines(stored))
	return ctx, trace.SpanContextFromContext(ctx).IsValid()
}

// headerLines reads "name: value" lines as a propagation.TextMapCarrier.
type headerLines string

// Get implements propagation.TextMapCarrier.
func (h headerLines) Get(key string) string {
	for rest := string(h); rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if k, v, ok := strings.Cut(line, ": "); ok && strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// Set implements propagation.TextMapCarrier; stored headers are read only.
func (headerLines) Set(string, string) {}

// Keys implements propagation.TextMapCarrier.
func (h headerLines) Keys() []string {
	var keys []string
	for rest := string(h); rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if k, _, ok := strings.Cut(line, ": "); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// StepSpan is the span of one step attempt; nil without a tracer.
type StepSpan struct {
	span trace.Span
}

// StartStep starts the span of a step attempt, parented by the trace
// context its run stored, and returns the context for the step's code.
func (t *Tracer) StartStep(ctx context.Context, stored string, a Attempt) (context.Context, *StepSpan) {
	if t == nil {
		return ctx, nil
	}
	parent, ok := withTraceContext(ctx, stored)
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(t.clock.Now()),
		trace.WithAttributes(
			attrRunID.String(a.Run.String()), attrWorkflow.String(a.Workflow), attrStep.String(a.Step),
			attrAttempt.Int(a.Attempt), attrTenant.String(a.Tenant),
		),
	}
	if !ok {
		// No trace to continue; not whatever span the engine's own
		// context happens to carry either.
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := t.tracer.Start(parent, "trellis.step "+a.Workflow+"/"+a.Step, opts...)
	return ctx, &StepSpan{span: span}
}

// End ends the span with the attempt's outcome, and its error when it
// failed.
func (s *StepSpan) End(outcome string, err error, at time.Time) {
	if s == nil {
		return
	}
	s.span.SetAttributes(attrTaskOutcome.String(outcome))
	if err != nil && outcome != OutcomeDropped {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End(trace.WithTimestamp(at))
}
