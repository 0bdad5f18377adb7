package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// deliverySpec ships, naps a minute, then waits up to three days for the
// customer's confirmation, sent to the run or by order id; a second wait
// for a review is skipped after an hour without one.
func deliverySpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name:        "delivery",
		InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string"}}}`,
		Events: []runtime.EventSpec{
			{Name: "confirmed", Schema: `{"type":"object","required":["by"],"properties":{"by":{"type":"string","minLength":1}}}`},
			{Name: "reviewed", Schema: `{"type":"object","required":["stars"],"properties":{"stars":{"type":"integer","minimum":1,"maximum":5}}}`},
		},
		Steps: []runtime.StepSpec{
			{Name: "ship"},
			{Name: "nap", Parents: []string{"ship"}, Sleep: time.Minute},
			{Name: "confirm", Parents: []string{"nap"}, WaitFor: &runtime.WaitForSpec{Event: "confirmed", Key: "input.orderId", Timeout: 72 * time.Hour}},
			{Name: "review", Parents: []string{"confirm"}, WaitFor: &runtime.WaitForSpec{Event: "reviewed", Timeout: time.Hour, OnTimeout: "skip"}},
			{Name: "thank", Parents: []string{"confirm", "review"},
				OutputSchema: `{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}`},
		},
	}
}

func deliveryHandlers() runtime.Handlers {
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"ship": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
		"thank": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			var c struct{ By string }
			var r struct{ Stars int }
			if err := json.Unmarshal(req.Parents["confirm"], &c); err != nil {
				return nil, err
			}
			if raw, ok := req.Parents["review"]; ok {
				if err := json.Unmarshal(raw, &r); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(fmt.Sprintf(`{"text":"thanks %s (%d stars)"}`, c.By, r.Stars)), nil
		},
	}}
}

func TestEventWaitMemory(t *testing.T) { testEventWait(t, trellistest.New(t)) }

func TestEventWaitPostgres(t *testing.T) {
	testEventWait(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

func testEventWait(t *testing.T, h *trellistest.Harness) {
	ctx := t.Context()
	wf, err := h.Engine.Register(deliverySpec(), deliveryHandlers())
	if err != nil {
		t.Fatal(err)
	}
	start := func(orderID string) runtime.RunID {
		t.Helper()
		ref, err := wf.Trigger(ctx, json.RawMessage(fmt.Sprintf(`{"orderId":%q}`, orderID)))
		if err != nil {
			t.Fatal(err)
		}
		h.RunUntilIdle()
		return ref.ID
	}

	t.Run("by key, while waiting; a signal to the run", func(t *testing.T) {
		id := start("o-1")
		h.Advance(time.Minute)
		if got := h.Steps(id)["confirm"]; got != runtime.TaskWaiting {
			t.Fatalf("confirm is %s, want WAITING", got)
		}
		n, err := wf.Send(ctx, "confirmed", "o-1", json.RawMessage(`{"by":"ada"}`))
		if err != nil || n != 1 {
			t.Fatalf("Send = %d, %v; want 1 wait woken", n, err)
		}
		h.RunUntilIdle()
		if n, err := wf.Signal(ctx, id, "reviewed", json.RawMessage(`{"stars":5}`)); err != nil || n != 1 {
			t.Fatalf("Signal = %d, %v; want 1 wait woken", n, err)
		}
		h.RunUntilIdle()
		res := h.Result(id)
		if res.Status != runtime.RunCompleted || string(res.Outputs["confirm"]) != `{"by":"ada"}` ||
			string(res.Outputs["thank"]) != `{"text":"thanks ada (5 stars)"}` {
			t.Fatalf("result = %+v, outputs %s", res, res.Outputs)
		}
		if got := fmt.Sprint(h.Trail(id, "confirm")); got != "[QUEUED WAITING WOKEN COMPLETED]" {
			t.Errorf("confirm's trail = %s", got)
		}
	})

	t.Run("sent before the wait begins: kept; the review times out and is skipped", func(t *testing.T) {
		id := start("o-2")
		if n, err := wf.Send(ctx, "confirmed", "o-2", json.RawMessage(`{"by":"bob"}`)); err != nil || n != 0 {
			t.Fatalf("Send = %d, %v; want 0 waits woken yet", n, err)
		}
		// Another order's confirmation, and one sent to the run for an
		// event nobody waits for, change nothing.
		if _, err := wf.Send(ctx, "confirmed", "o-other", json.RawMessage(`{"by":"eve"}`)); err != nil {
			t.Fatal(err)
		}
		h.Advance(time.Minute)
		if got := h.Steps(id)["review"]; got != runtime.TaskWaiting {
			t.Fatalf("review is %s, want WAITING (confirm should have had its event)", got)
		}
		h.Advance(time.Hour)
		res := h.Result(id)
		if res.Status != runtime.RunCompleted || res.Steps["review"] != runtime.TaskSkipped ||
			string(res.Outputs["thank"]) != `{"text":"thanks bob (0 stars)"}` {
			t.Fatalf("result = %+v, outputs %s", res, res.Outputs)
		}
	})

	t.Run("a wait that times out fails its run", func(t *testing.T) {
		id := start("o-3")
		h.Advance(73 * time.Hour)
		res := h.Result(id)
		if res.Status != runtime.RunFailed || res.Failure.Step != "confirm" || !strings.Contains(res.Failure.Error, "no confirmed event came within 72h0m0s") {
			t.Fatalf("result = %+v, failure %+v", res, res.Failure)
		}
		// An event too late changes nothing; retrying the run delivers it.
		if _, err := wf.Send(ctx, "confirmed", "o-3", json.RawMessage(`{"by":"late"}`)); err != nil {
			t.Fatal(err)
		}
		if err := h.Engine.RetryRun(ctx, id); err != nil {
			t.Fatal(err)
		}
		h.Advance(2 * time.Hour)
		if res := h.Result(id); res.Status != runtime.RunCompleted || string(res.Outputs["confirm"]) != `{"by":"late"}` {
			t.Fatalf("after retry: %+v, outputs %s", res, res.Outputs)
		}
	})

	t.Run("bad events are refused", func(t *testing.T) {
		_, err := wf.Send(ctx, "confirmed", "o-1", json.RawMessage(`{"by":""}`))
		var ee *runtime.EventError
		if !errors.As(err, &ee) || !errors.Is(err, runtime.ErrInvalidEvent) || !strings.Contains(err.Error(), "payload.by") {
			t.Errorf("empty by: %v", err)
		}
		if _, err := wf.Send(ctx, "shipped", "o-1", nil); err == nil || !strings.Contains(err.Error(), "declares no such event") {
			t.Errorf("unknown event: %v", err)
		}
		missing := runtime.RunID{1}
		if _, err := wf.Signal(ctx, missing, "reviewed", json.RawMessage(`{"stars":1}`)); !errors.Is(err, runtime.ErrRunNotFound) {
			t.Errorf("to no run: %v", err)
		}
	})
}

// TestLoneKindsOfSteps runs workflows whose only wait has no key and whose
// only child workflow step builds its input in code: what the definition
// compiles for keys and input expressions is then absent, not empty.
// TestSendEvent sends events by workflow name, as trellis events send
// does, from an engine that has not the workflow's code: checked against
// the newest stored version, to a run or by key.
func TestSendEvent(t *testing.T) {
	h := trellistest.New(t)
	ctx := t.Context()
	wf, err := h.Engine.Register(deliverySpec(), deliveryHandlers())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := wf.Trigger(ctx, json.RawMessage(`{"orderId":"o-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(time.Minute)
	codeless, err := runtime.New(runtime.Config{Store: h.Engine.Store(), Clock: h.Clock})
	if err != nil {
		t.Fatal(err)
	}
	version := wf.Definition().Version()

	sent, err := codeless.SendEvent(ctx, runtime.EventByName{Workflow: "delivery", Event: "confirmed", Key: "o-1", Payload: json.RawMessage(`{"by":"ada"}`)})
	if want := (runtime.Sent{Workflow: "delivery", Version: version, Event: "confirmed", Key: "o-1", Woken: 1}); err != nil || sent != want {
		t.Fatalf("SendEvent by key = %+v, %v; want %+v", sent, err, want)
	}
	h.RunUntilIdle()
	sent, err = codeless.SendEvent(ctx, runtime.EventByName{Workflow: "delivery", Event: "reviewed", Run: ref.ID, Payload: json.RawMessage(`{"stars":4}`)})
	if err != nil || sent.Woken != 1 || sent.Run != ref.ID {
		t.Fatalf("SendEvent to the run = %+v, %v; want 1 wait woken", sent, err)
	}
	h.RunUntilIdle()
	if res := h.Result(ref.ID); res.Status != runtime.RunCompleted || string(res.Outputs["thank"]) != `{"text":"thanks ada (4 stars)"}` {
		t.Errorf("after the events: %+v, outputs %s", res, res.Outputs)
	}

	for _, tt := range []struct {
		ev   runtime.EventByName
		want string
	}{
		{runtime.EventByName{Workflow: "delivery", Event: "confirmed"}, "give either a run"},
		{runtime.EventByName{Workflow: "delivery", Event: "confirmed", Key: "k", Run: ref.ID}, "give either a run"},
		{runtime.EventByName{Workflow: "nope", Event: "confirmed", Key: "k"}, `no version of workflow "nope" is stored`},
		{runtime.EventByName{Workflow: "delivery", Event: "shipped", Key: "k"}, `declares no event "shipped"; it declares [confirmed reviewed]`},
		{runtime.EventByName{Workflow: "delivery", Event: "reviewed", Key: "k", Payload: json.RawMessage(`{"stars":9}`)}, "stars"},
	} {
		if _, err := codeless.SendEvent(ctx, tt.ev); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SendEvent(%+v) = %v, want an error containing %q", tt.ev, err, tt.want)
		}
	}
}

func TestLoneKindsOfSteps(t *testing.T) {
	h := trellistest.New(t)
	ctx := t.Context()
	waits, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name: "lone-wait", InputSchema: `{"type":"object"}`,
		Events: []runtime.EventSpec{{Name: "go", Schema: `{"type":"object"}`}},
		Steps:  []runtime.StepSpec{{Name: "wait", WaitFor: &runtime.WaitForSpec{Event: "go"}}},
	}, runtime.Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := waits.Trigger(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	if _, err := waits.Signal(ctx, ref.ID, "go", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if res, err := waits.Wait(ctx, ref.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("lone wait: %+v, %v", res, err)
	}
	if _, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name: "leaf", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "only"}},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{"only": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil }}}); err != nil {
		t.Fatal(err)
	}
	parent, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name: "lone-child", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "start", Workflow: &runtime.ChildWorkflowSpec{Name: "leaf"}}},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{"start": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := parent.Run(ctx, nil); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("lone child: %+v, %v", res, err)
	}
}
