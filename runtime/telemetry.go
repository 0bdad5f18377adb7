package runtime

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
)

// What the engine reports about itself (metrics, spans, log lines) is
// made by the telemetry package; this file holds the public log keys and
// log handler, and the few glue methods that give telemetry the engine's
// names for things.

// Log attribute keys of a step attempt: every engine log line about a
// task carries them, and so does every line a step logs through a
// handler made by NewLogHandler.
const (
	LogKeyRunID    = "run_id"
	LogKeyWorkflow = "workflow"
	LogKeyStep     = "step"
	LogKeyAttempt  = "attempt"
	LogKeyTenant   = "tenant"
	// LogKeyTraceID and LogKeySpanID name the trace and span a line was
	// logged in, when its context carries a span (with a TracerProvider,
	// a step's context does).
	LogKeyTraceID = "trace_id"
	LogKeySpanID  = "span_id"
)

// attempt names the step attempt info describes, for telemetry.
func (info StepInfo) attempt() telemetry.Attempt {
	return telemetry.Attempt{Run: info.RunID, Workflow: info.Workflow, Tenant: info.Tenant, Step: info.Step, Attempt: info.Attempt}
}

// startTrigger starts the span of a trigger (see telemetry.Tracer).
func (e *Engine) startTrigger(ctx context.Context, workflow, tenant string, runs int, tags map[string]string) (context.Context, trace.Span, string) {
	return e.tracer.StartTrigger(ctx, workflow, tenant, runs, tags)
}

// endTrigger ends a trigger's span, with the run's id when it made one,
// or the error when it failed.
func (e *Engine) endTrigger(span trace.Span, refs []RunRef, err error) {
	run := ""
	if len(refs) == 1 {
		run = refs[0].ID.String()
	}
	e.tracer.EndTrigger(span, run, err)
}

// observeGauges starts observing the metric gauges, until the
// registration it returns (nil without metrics) is unregistered.
func (e *Engine) observeGauges() (metric.Registration, error) {
	src := telemetry.GaugeSource{
		Leader: e.IsLeader, Cluster: e.reportsCluster, Store: e.store, Faults: e.faults, Clock: e.clock,
		StaleAfter: e.cfg.StaleAfter,
	}
	if e.cfg.StuckAfter > 0 {
		src.StuckRuns = func(ctx context.Context) (int, error) {
			runs, err := e.StuckRuns(ctx)
			return len(runs), err
		}
	}
	src.Unserved = func(ctx context.Context) ([]telemetry.UnservedTasks, error) {
		u, err := e.Unserved(ctx)
		out := make([]telemetry.UnservedTasks, len(u))
		for i, w := range u {
			out[i] = telemetry.UnservedTasks{Workflow: w.Workflow, Version: w.Version, Tasks: w.Queued}
		}
		return out, err
	}
	return e.metrics.Observe(src)
}

// reportsCluster reports whether this engine reports the gauges read from
// the store: it leads, or a Driver runs it (a test's engine, which does
// the leader's work itself).
func (e *Engine) reportsCluster() bool {
	if e.IsLeader() {
		return true
	}
	return e.mode.currentDriver() != nil
}

// NewLogHandler wraps next so that each record logged with the context of
// a step attempt carries the attempt's run_id, workflow, step, attempt and
// tenant (the keys the engine's own lines use), and, when the context
// carries a span, its trace_id and span_id. Records logged with any other
// context pass through unchanged. It is the way to give a step's own log
// lines what the engine's lines about the step have:
//
//	log := slog.New(runtime.NewLogHandler(slog.NewJSONHandler(os.Stderr, nil)))
//	...
//	func (s *steps) Charge(ctx context.Context, in Input) (ChargeOutput, error) {
//		log.InfoContext(ctx, "charging", "cents", in.AmountCents) // run_id=... step=charge ...
//
// Only the Context variants of slog's methods (InfoContext, Log, ...)
// pass a context; attributes are added where the record is handled, so
// within any group the logger was given.
func NewLogHandler(next slog.Handler) slog.Handler {
	return logHandler{next: next}
}

type logHandler struct {
	next slog.Handler
}

// Enabled implements slog.Handler.
func (h logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	info, step := InfoFromContext(ctx)
	sc := trace.SpanContextFromContext(ctx)
	if !step && !sc.IsValid() {
		return h.next.Handle(ctx, r)
	}
	r = r.Clone()
	if step {
		r.AddAttrs(info.attempt().LogAttrs()...)
	}
	if sc.IsValid() {
		r.AddAttrs(slog.String(LogKeyTraceID, sc.TraceID().String()), slog.String(LogKeySpanID, sc.SpanID().String()))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{next: h.next.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{next: h.next.WithGroup(name)}
}
