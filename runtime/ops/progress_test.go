package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// TestInProgress: a running run's steps under way say what they wait
// for and until when: a retry's next attempt, a sleep's end, an event
// wait's deadline.
func TestInProgress(t *testing.T) {
	h := trellistest.New(t)
	failed := false
	wf, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name:   "states",
		Events: []runtime.EventSpec{{Name: "order-confirmed", Schema: `{"type":"object"}`}},
		Steps: []runtime.StepSpec{
			{Name: "charge", Retry: runtime.RetryPolicy{MaxRetries: 3, InitialDelay: time.Minute, BackoffFactor: 1, MaxDelay: time.Minute}},
			{Name: "nap", Sleep: 3 * time.Hour},
			{Name: "confirm", WaitFor: &runtime.WaitForSpec{Event: "order-confirmed", Timeout: 2 * time.Hour}},
		},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			if !failed {
				failed = true
				return nil, errors.New("gateway timeout")
			}
			return json.RawMessage(`{}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := wf.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	start := h.Now()
	h.RunUntilIdle()
	admin := ops.New(h.Engine)
	got, err := admin.InProgress(t.Context(), []runtime.RunID{ref.ID})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]ops.Step{}
	for _, s := range got[ref.ID] {
		steps[s.Name] = s
	}
	want := map[string]struct {
		status runtime.TaskStatus
		wake   time.Time
		event  string
	}{
		"charge":  {runtime.TaskRetrying, start.Add(time.Minute), ""},
		"nap":     {runtime.TaskSleeping, start.Add(3 * time.Hour), ""},
		"confirm": {runtime.TaskWaiting, start.Add(2 * time.Hour), "order-confirmed"},
	}
	if len(steps) != len(want) {
		t.Fatalf("InProgress = %+v, want %d steps", got, len(want))
	}
	for name, w := range want {
		s := steps[name]
		if s.Status != w.status || s.WakeAt == nil || !s.WakeAt.Equal(w.wake) || s.Event != w.event {
			t.Errorf("%s: %s, wakes %v, event %q; want %s, %v, %q", name, s.Status, s.WakeAt, s.Event, w.status, w.wake, w.event)
		}
	}
	detail, err := admin.GetRun(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range detail.Steps {
		if s.Name == "confirm" && (s.Event != "order-confirmed" || s.WakeAt == nil || !s.WakeAt.Equal(start.Add(2*time.Hour))) {
			t.Errorf("GetRun's confirm step: event %q, wakes %v", s.Event, s.WakeAt)
		}
	}

	h.Advance(time.Minute) // charge runs again and completes
	got, _ = admin.InProgress(t.Context(), []runtime.RunID{ref.ID})
	for _, s := range got[ref.ID] {
		if s.Name == "charge" {
			t.Errorf("charge completed, yet is in progress: %+v", s)
		}
	}
	h.Advance(3 * time.Hour) // the wait times out: the run fails
	if got, _ = admin.InProgress(t.Context(), []runtime.RunID{ref.ID}); len(got) != 0 {
		t.Errorf("InProgress of an ended run = %+v, want nothing", got)
	}
}

// TestChildRuns: a top-level listing leaves out the items of a map step,
// which ChildRuns counts and previews beneath their parent.
func TestChildRuns(t *testing.T) {
	h := trellistest.New(t)
	wf, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name:        "squares",
		InputSchema: `{"type":"object","required":["ns"],"properties":{"ns":{"type":"array","items":{"type":"integer"}}}}`,
		Steps:       []runtime.StepSpec{{Name: "square", ForEach: &runtime.ForEachSpec{Items: "input.ns", ItemSchema: `{"type":"integer"}`}}},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"square": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			if string(req.Input) == "3" {
				return nil, runtime.NonRetryable(errors.New("three is odd"))
			}
			return json.RawMessage(`{}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := wf.Trigger(t.Context(), json.RawMessage(`{"ns":[1,2,3,4,5,6,7,8]}`))
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	admin := ops.New(h.Engine)
	top, err := admin.ListRuns(t.Context(), ops.RunFilter{TopLevel: true})
	if err != nil || len(top.Runs) != 1 || top.Runs[0].ID != ref.ID {
		t.Fatalf("ListRuns(TopLevel) = %+v, %v; want run %s only", top, err, ref.ID)
	}
	all, err := admin.ListRuns(t.Context(), ops.RunFilter{})
	if err != nil || len(all.Runs) != 9 {
		t.Fatalf("ListRuns = %d runs, %v; want 9", len(all.Runs), err)
	}
	kids, err := admin.ChildRuns(t.Context(), []runtime.RunID{ref.ID}, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := kids[ref.ID]
	if c == nil || c.Total != 8 || len(c.First) != 3 {
		t.Fatalf("ChildRuns = %+v, want 8 in all, the first 3", c)
	}
	if c.Counts[runtime.RunFailed] != 1 || c.Counts[runtime.RunCompleted]+c.Counts[runtime.RunCancelled] != 7 {
		t.Errorf("Counts = %v, want one failed", c.Counts)
	}
	if f := c.First[2]; f.Parent == nil || f.Parent.Index != 2 || f.Status != runtime.RunFailed || f.Failure == nil || f.Failure.Step != "square" {
		t.Errorf("the third item: %+v, want index 2, failed at step square", fmt.Sprint(f))
	}
}
