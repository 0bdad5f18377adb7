package telemetry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// An outage is logged when it starts, every FaultReminder while it
// lasts, and when it ends; not at every failure.
func TestFaultsLogOncePerOutage(t *testing.T) {
	var buf bytes.Buffer
	f := NewFaults(slog.New(slog.NewTextHandler(&buf, nil)))
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 { // 10 failures over 45s
		f.Failed("claiming tasks", errors.New("connection refused"), at.Add(time.Duration(i)*5*time.Second))
	}
	f.OK("claiming tasks", at.Add(50*time.Second))
	f.OK("claiming tasks", at.Add(55*time.Second))
	out := buf.String()
	if n := strings.Count(out, "claiming tasks failed; retrying"); n != 2 {
		t.Errorf("logged the failure %d times, want 2 (at the start and 30s later):\n%s", n, out)
	}
	if n := strings.Count(out, "claiming tasks works again"); n != 1 || !strings.Contains(out, "failures=10") {
		t.Errorf("logged the recovery %d times, or without its 10 failures:\n%s", n, out)
	}
}

// Without providers, metrics and spans cost a nil check and do nothing.
func TestNilProvidersRecordNothing(t *testing.T) {
	m, err := NewMetrics(nil, false, nil)
	if err != nil || m != nil {
		t.Fatalf("NewMetrics(nil) = %v, %v; want nil, nil", m, err)
	}
	ctx := context.Background()
	m.RunsStarted(ctx, "w", "t", 1, nil)
	m.RunFinished(ctx, "w", "t", OutcomeCompleted)
	m.TaskEnded(ctx, "w", "s", "t", OutcomeFailed)
	m.TimersFired(ctx, []store.FiredTimer{{}}, time.Now())
	if reg, err := m.Observe(GaugeSource{}); reg != nil || err != nil {
		t.Errorf("Observe without metrics = %v, %v", reg, err)
	}
	tr := NewTracer(nil, nil)
	got, span, stored := tr.StartTrigger(ctx, "w", "t", 1, nil)
	if got != ctx || span != nil || stored != "" {
		t.Error("a nil tracer started a trigger span")
	}
	sctx, step := tr.StartStep(ctx, "", Attempt{})
	step.End(OutcomeCompleted, nil, time.Now())
	if sctx != ctx || step != nil {
		t.Error("a nil tracer started a step span")
	}
}
