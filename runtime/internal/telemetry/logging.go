package telemetry

import (
	"log/slog"

	"github.com/google/uuid"
)

// Log attribute keys of a step attempt: every engine log line about a
// task carries them (the runtime package exports them as LogKey...).
const (
	KeyRunID    = "run_id"
	KeyWorkflow = "workflow"
	KeyStep     = "step"
	KeyAttempt  = "attempt"
	KeyTenant   = "tenant"
	KeyTraceID  = "trace_id"
	KeySpanID   = "span_id"
)

// Attempt names one step attempt, for its log lines, spans and metrics.
type Attempt struct {
	Run      uuid.UUID
	Workflow string
	Tenant   string
	Step     string
	Attempt  int
}

// LogAttrs are the log attributes of a step attempt.
func (a Attempt) LogAttrs() []slog.Attr {
	return []slog.Attr{
		slog.String(KeyRunID, a.Run.String()), slog.String(KeyWorkflow, a.Workflow),
		slog.String(KeyStep, a.Step), slog.Int(KeyAttempt, a.Attempt), slog.String(KeyTenant, a.Tenant),
	}
}

// Logger returns log with a step attempt's attributes. Call it where a
// line is logged, not ahead: With formats the attributes at once, which
// a task that logs nothing should not pay for.
func (a Attempt) Logger(log *slog.Logger) *slog.Logger {
	attrs := a.LogAttrs()
	args := make([]any, len(attrs))
	for i, at := range attrs {
		args[i] = at
	}
	return log.With(args...)
}
