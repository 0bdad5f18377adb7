package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// shipmentSpec is a child workflow: it labels a parcel, then, when the
// input says so, sleeps an hour before handing it over.
func shipmentSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name: "shipment",
		InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string","minLength":1},` +
			`"items":{"type":"integer"},"slow":{"type":"boolean"},"fail":{"type":"boolean"}}}`,
		Steps: []runtime.StepSpec{
			{Name: "label", OutputSchema: `{"type":"object","required":["tracking"],"properties":{"tracking":{"type":"string"}}}`},
			{Name: "dawdle", Parents: []string{"label"}, Sleep: time.Hour, SkipIf: []string{"!input.slow"}},
			{Name: "handover", Parents: []string{"label", "dawdle"}},
		},
	}
}

func shipmentHandlers(runs *atomic.Int64) runtime.Handlers {
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"label": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			runs.Add(1)
			var in struct {
				OrderID string
				Items   int
				Fail    bool
			}
			if err := json.Unmarshal(req.Input, &in); err != nil {
				return nil, err
			}
			if in.Fail {
				return nil, runtime.NonRetryable(errors.New("no courier"))
			}
			return json.RawMessage(fmt.Sprintf(`{"tracking":"T-%s-%d"}`, in.OrderID, in.Items)), nil
		},
		"handover": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
	}}
}

// orderSpec starts a shipment, its input built by CEL (ship) or by code
// (reship, when input.again).
func orderSpec() *runtime.WorkflowSpec {
	retry := runtime.DefaultRetryPolicy()
	retry.MaxRetries = 1
	return &runtime.WorkflowSpec{
		Name: "order",
		InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string"},` +
			`"slow":{"type":"boolean"},"fail":{"type":"boolean"},"again":{"type":"boolean"}}}`,
		Steps: []runtime.StepSpec{
			{Name: "pack", OutputSchema: `{"type":"object","required":["items"],"properties":{"items":{"type":"integer"}}}`},
			{Name: "ship", Parents: []string{"pack"}, Retry: retry, Timeout: 30 * time.Minute,
				Workflow: &runtime.ChildWorkflowSpec{Name: "shipment", Input: map[string]string{
					"orderId": "input.orderId", "items": "parents.pack.items", "slow": "input.slow", "fail": "input.fail",
				}},
				OutputSchema: `{"type":"object","properties":{"label":{"type":"object","properties":{"tracking":{"type":"string"}}}}}`},
			{Name: "reship", Parents: []string{"ship"}, SkipIf: []string{"!input.again"},
				Workflow: &runtime.ChildWorkflowSpec{Name: "shipment"}},
			{Name: "notify", Parents: []string{"ship", "reship"},
				OutputSchema: `{"type":"object","required":["said"],"properties":{"said":{"type":"string"}}}`},
		},
	}
}

func orderHandlers() runtime.Handlers {
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"pack": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			return json.RawMessage(`{"items":3}`), nil
		},
		"reship": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			var ship struct{ Label struct{ Tracking string } }
			if err := json.Unmarshal(req.Parents["ship"], &ship); err != nil {
				return nil, err
			}
			return json.RawMessage(fmt.Sprintf(`{"orderId":"again-%s"}`, ship.Label.Tracking)), nil
		},
		"notify": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			var ship struct{ Label struct{ Tracking string } }
			if err := json.Unmarshal(req.Parents["ship"], &ship); err != nil {
				return nil, err
			}
			return json.RawMessage(fmt.Sprintf(`{"said":"shipped %s"}`, ship.Label.Tracking)), nil
		},
	}}
}

func TestChildWorkflowMemory(t *testing.T) { testChildWorkflow(t, trellistest.New(t)) }

func TestChildWorkflowPostgres(t *testing.T) {
	testChildWorkflow(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

func testChildWorkflow(t *testing.T, h *trellistest.Harness) {
	ctx := t.Context()
	var labels atomic.Int64
	if _, err := h.Engine.Register(shipmentSpec(), shipmentHandlers(&labels)); err != nil {
		t.Fatal(err)
	}
	orders, err := h.Engine.Register(orderSpec(), orderHandlers())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("input by CEL and by code", func(t *testing.T) {
		res, err := orders.Run(ctx, json.RawMessage(`{"orderId":"o-1","again":true}`))
		if err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if got := string(res.Outputs["ship"]); got != `{"label":{"tracking":"T-o-1-3"}}` {
			t.Errorf("ship = %s", got)
		}
		if got := string(res.Outputs["reship"]); got != `{"label":{"tracking":"T-again-T-o-1-3-0"}}` {
			t.Errorf("reship = %s", got)
		}
		if got := string(res.Outputs["notify"]); got != `{"said":"shipped T-o-1-3"}` {
			t.Errorf("notify = %s", got)
		}
		kids, err := h.Store.ChildRuns(ctx, store.TaskKey{Run: res.ID, Step: 1})
		if err != nil || len(kids) != 1 || kids[0].Workflow != "shipment" || kids[0].Status != store.RunCompleted ||
			kids[0].Parent.Task() != (store.TaskKey{Run: res.ID, Step: 1}) || kids[0].Tenant != runtime.DefaultTenant {
			t.Fatalf("child runs of ship = %+v, %v", kids, err)
		}
		if got := h.Trail(res.ID, "ship"); fmt.Sprint(got) != "[QUEUED WAITING WOKEN COMPLETED]" {
			t.Errorf("ship's trail = %v", got)
		}
	})

	t.Run("a failed child fails the attempt; retries start new runs", func(t *testing.T) {
		before := labels.Load()
		res, err := orders.Trigger(ctx, json.RawMessage(`{"orderId":"o-2","fail":true}`))
		if err != nil {
			t.Fatal(err)
		}
		h.Settle()
		r := h.Result(res.ID)
		if r.Status != runtime.RunFailed || r.Failure.Step != "ship" || !strings.Contains(r.Failure.Error, "workflow shipment failed") ||
			!strings.Contains(r.Failure.Error, "step label: no courier") {
			t.Fatalf("result = %+v, failure %+v", r, r.Failure)
		}
		if n := labels.Load() - before; n != 2 {
			t.Errorf("label ran %d times, want 2 (one run per attempt)", n)
		}
		kids, _ := h.Store.ChildRuns(ctx, store.TaskKey{Run: res.ID, Step: 1})
		if len(kids) != 2 || kids[0].Parent.Index != 1 || kids[1].Parent.Index != 2 {
			t.Errorf("child runs = %+v", kids)
		}
	})

	t.Run("a child outliving the timeout is cancelled", func(t *testing.T) {
		ref, err := orders.Trigger(ctx, json.RawMessage(`{"orderId":"o-3","slow":true}`))
		if err != nil {
			t.Fatal(err)
		}
		h.Advance(2 * time.Hour)
		r := h.Result(ref.ID)
		if r.Status != runtime.RunFailed || !strings.Contains(r.Failure.Error, "timed out after 30m0s") {
			t.Fatalf("result = %+v, failure %+v", r, r.Failure)
		}
		kids, _ := h.Store.ChildRuns(ctx, store.TaskKey{Run: ref.ID, Step: 1})
		if len(kids) != 2 || kids[0].Status != store.RunCancelled || kids[1].Status != store.RunCancelled {
			t.Errorf("child runs = %+v", kids)
		}
	})

	t.Run("cancelling the parent cancels the child", func(t *testing.T) {
		ref, err := orders.Trigger(ctx, json.RawMessage(`{"orderId":"o-4","slow":true}`))
		if err != nil {
			t.Fatal(err)
		}
		h.RunUntilIdle()
		if ok, err := h.Engine.CancelRun(ctx, ref.ID); !ok || err != nil {
			t.Fatalf("CancelRun = %v, %v", ok, err)
		}
		kids, _ := h.Store.ChildRuns(ctx, store.TaskKey{Run: ref.ID, Step: 1})
		if len(kids) != 1 || kids[0].Status != store.RunCancelled {
			t.Errorf("child runs = %+v", kids)
		}
	})

	t.Run("an input the child refuses fails the step", func(t *testing.T) {
		res, _ := orders.Run(ctx, json.RawMessage(`{"orderId":""}`))
		if res == nil || res.Status != runtime.RunFailed || !strings.Contains(res.Failure.Error, "input.orderId") {
			t.Fatalf("result = %+v", res)
		}
	})
}

func TestChildWorkflowNotKnown(t *testing.T) {
	h := trellistest.New(t)
	orders, err := h.Engine.Register(orderSpec(), orderHandlers())
	if err != nil {
		t.Fatal(err)
	}
	res, _ := orders.Run(t.Context(), json.RawMessage(`{"orderId":"o-1"}`))
	if res == nil || res.Status != runtime.RunFailed || !strings.Contains(res.Failure.Error, "which this engine does not know") {
		t.Fatalf("result = %+v", res)
	}
}
