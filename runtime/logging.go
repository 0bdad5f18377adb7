package runtime

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/effectivelabs/trellis/runtime/store"
)

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

// stepLogAttrs are the log attributes of a step attempt.
func stepLogAttrs(info StepInfo) []slog.Attr {
	return []slog.Attr{
		slog.String(LogKeyRunID, info.RunID.String()), slog.String(LogKeyWorkflow, info.Workflow),
		slog.String(LogKeyStep, info.Step), slog.Int(LogKeyAttempt, info.Attempt), slog.String(LogKeyTenant, info.Tenant),
	}
}

// taskLog returns the engine's logger with a step attempt's attributes.
// Call it where a line is logged, not ahead: With formats the attributes
// at once, which a task that logs nothing should not pay for.
func (e *Engine) taskLog(info StepInfo) *slog.Logger {
	attrs := stepLogAttrs(info)
	args := make([]any, len(attrs))
	for i, a := range attrs {
		args[i] = a
	}
	return e.log.With(args...)
}

// attemptLog returns the engine's logger with the attributes of an owned
// attempt, as far as the engine knows them.
func (e *Engine) attemptLog(a store.Attempt) *slog.Logger {
	cl, ok := e.claims.about(a)
	if !ok {
		return e.log.With(LogKeyRunID, a.Key.Run.String(), LogKeyStep, fmt.Sprintf("step %d", a.Key.Step))
	}
	info := StepInfo{RunID: a.Key.Run, Workflow: cl.workflow, Tenant: cl.tenant, Step: fmt.Sprintf("step %d", a.Key.Step), Attempt: a.Attempt}
	e.mu.Lock()
	if def, ok := e.defs[cl.version]; ok && a.Key.Step < len(def.graph.Steps) {
		info.Step = def.graph.Steps[a.Key.Step].Name
	}
	e.mu.Unlock()
	return e.taskLog(info)
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
		r.AddAttrs(stepLogAttrs(info)...)
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
