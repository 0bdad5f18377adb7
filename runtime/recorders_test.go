package runtime_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// An engine with many slots records two batches of results at once, and
// hands children off from both: every step of every run still runs
// exactly once, and every run completes.
func TestWideEngineRecordsInTwoBatchesAtOnce(t *testing.T) {
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Concurrency: 500, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var ran [4]atomic.Int64
	step := func(i int) runtime.StepFunc {
		return func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			ran[i].Add(1)
			return json.RawMessage(`{}`), nil
		}
	}
	wf, err := engine.Register(&runtime.WorkflowSpec{
		Name: "wide", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{
			{Name: "a"}, {Name: "b", Parents: []string{"a"}}, {Name: "c", Parents: []string{"a"}},
			{Name: "d", Parents: []string{"b", "c"}},
		},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{"a": step(0), "b": step(1), "c": step(2), "d": step(3)}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, engine)
	const runs = 2000
	refs, err := wf.TriggerMany(t.Context(), make([]json.RawMessage, runs))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.RunID, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	results, err := engine.WaitMany(waitCtx(t), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Status != runtime.RunCompleted {
			t.Fatalf("run %s is %s, want COMPLETED", r.ID, r.Status)
		}
	}
	for i := range ran {
		if got := ran[i].Load(); got != runs {
			t.Errorf("step %d ran %d times, want %d", i, got, runs)
		}
	}
}
