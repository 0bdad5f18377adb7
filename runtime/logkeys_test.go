package runtime

import (
	"testing"

	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
)

// The engine's own log lines (telemetry's keys) and the lines a step logs
// through NewLogHandler (LogKey...) name a step attempt with the same keys.
func TestLogKeysAgreeWithTelemetry(t *testing.T) {
	for _, k := range []struct{ public, internal string }{
		{LogKeyRunID, telemetry.KeyRunID}, {LogKeyWorkflow, telemetry.KeyWorkflow}, {LogKeyStep, telemetry.KeyStep},
		{LogKeyAttempt, telemetry.KeyAttempt}, {LogKeyTenant, telemetry.KeyTenant},
		{LogKeyTraceID, telemetry.KeyTraceID}, {LogKeySpanID, telemetry.KeySpanID},
	} {
		if k.public != k.internal {
			t.Errorf("runtime logs %q where telemetry logs %q", k.public, k.internal)
		}
	}
}
