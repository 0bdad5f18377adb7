package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// squares maps over input.ns, squaring each item, and sums the squares.
func squaresSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name:        "squares",
		InputSchema: `{"type":"object","required":["ns"],"properties":{"ns":{"type":"array","items":{"type":"integer"}}}}`,
		Steps: []runtime.StepSpec{
			{Name: "square", ForEach: &runtime.ForEachSpec{Items: "input.ns", Concurrency: 2, ItemSchema: `{"type":"integer"}`},
				OutputSchema: `{"type":"object","required":["sq"],"properties":{"sq":{"type":"integer"}}}`,
				Retry:        runtime.DefaultRetryPolicy()},
			{Name: "sum", Parents: []string{"square"}, SkipIf: []string{"parents.square.exists(s, s.sq < 0)"},
				OutputSchema: `{"type":"object","required":["total"],"properties":{"total":{"type":"integer"}}}`},
		},
	}
}

func TestMapStepMemory(t *testing.T) { testMapStep(t, trellistest.New(t)) }

func TestMapStepPostgres(t *testing.T) {
	testMapStep(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

func testMapStep(t *testing.T, h *trellistest.Harness) {
	var calls atomic.Int64
	wf, err := h.Engine.Register(squaresSpec(), runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"square": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			calls.Add(1)
			var n int
			if err := json.Unmarshal(req.Input, &n); err != nil {
				return nil, err
			}
			if n == 13 {
				return nil, runtime.NonRetryable(fmt.Errorf("unlucky"))
			}
			return json.RawMessage(fmt.Sprintf(`{"sq":%d}`, n*n)), nil
		},
		"sum": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			var sq []struct{ Sq int }
			if err := json.Unmarshal(req.Parents["square"], &sq); err != nil {
				return nil, err
			}
			total := 0
			for _, s := range sq {
				total += s.Sq
			}
			return json.RawMessage(fmt.Sprintf(`{"total":%d}`, total)), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(t.Context(), json.RawMessage(`{"ns":[1,2,3,4,5,6,7,8,9,10]}`))
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := string(res.Outputs["sum"]); got != `{"total":385}` {
		t.Errorf("sum = %s, want 385", got)
	}
	if got := string(res.Outputs["square"]); !strings.HasPrefix(got, `[{"sq":1},{"sq":4},{"sq":9}`) {
		t.Errorf("square = %s", got)
	}
	res, err = wf.Run(t.Context(), json.RawMessage(`{"ns":[]}`))
	if err != nil || res.Status != runtime.RunCompleted || string(res.Outputs["sum"]) != `{"total":0}` {
		t.Fatalf("empty map: %+v, %v", res, err)
	}
	res, err = wf.Run(t.Context(), json.RawMessage(`{"ns":[1,13,2]}`))
	if res == nil || res.Status != runtime.RunFailed || !strings.Contains(res.Failure.Error, "item 1 failed") {
		t.Fatalf("failing item: %+v, %v", res, err)
	}
	t.Log(res.Failure.Error)
}
