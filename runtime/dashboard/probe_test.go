package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/schema/spec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgxpool schedules a health check that sleeps briefly and may
		// outlive pool.Close by up to 500ms; it is the pool's, not ours.
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).triggerHealthCheck.func1"),
	)
}

// probeSpec is the workflow the tests run: fetch returns the run's input
// as its output (so inputs and outputs carry whatever a test puts in
// them), charge fails while the probe says so, with the input's note in
// its error, then a durable sleep and ship; alert handles failures.
func probeSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name:        "probe",
		Description: "Echoes its input, fails on demand, sleeps, ships.",
		InputSchema: `{"type":"object","properties":{"note":{"type":"string"},"amount":{"type":"integer"}}}`,
		Steps: []spec.Step{
			{Name: "fetch"},
			{Name: "charge", Parents: []string{"fetch"}, SkipIf: []string{"input.amount < 0"}},
			{Name: "cool-off", Parents: []string{"charge"}, Sleep: time.Second},
			{Name: "ship", Parents: []string{"cool-off"}},
		},
		OnFailure: &spec.OnFailure{Name: "alert"},
	}
}

// probe is the code of the probe workflow.
type probe struct {
	// failing makes charge fail (non-retryable) while true.
	failing atomic.Bool
}

func (p *probe) handlers() runtime.Handlers {
	return runtime.Handlers{
		Steps: map[string]runtime.StepFunc{
			"fetch": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) { return req.Input, nil },
			"charge": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
				if p.failing.Load() {
					var in struct{ Note string }
					_ = json.Unmarshal(req.Input, &in)
					return nil, runtime.NonRetryable(fmt.Errorf("card declined: %s", in.Note))
				}
				return json.RawMessage(`{"chargeId":"ch-1"}`), nil
			},
			"ship": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
				return json.RawMessage(`{"shipped":true}`), nil
			},
		},
		OnFailure: func(context.Context, *runtime.FailureRequest) error { return nil },
	}
}

// register registers the probe workflow on engine.
func (p *probe) register(t testing.TB, engine *runtime.Engine) *runtime.Workflow {
	t.Helper()
	w, err := engine.Register(probeSpec(), p.handlers())
	if err != nil {
		t.Fatalf("registering the probe workflow: %v", err)
	}
	return w
}
