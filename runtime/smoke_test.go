package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

func TestSmokeChainWithSleep(t *testing.T) {
	h := trellistest.New(t)
	spec := &runtime.WorkflowSpec{
		Name:        "smoke",
		InputSchema: `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`,
		Steps: []runtime.StepSpec{
			{Name: "a", OutputSchema: `{"type":"object","properties":{"v":{"type":"integer"}}}`},
			{Name: "nap", Parents: []string{"a"}, Sleep: 24 * time.Hour},
			{Name: "b", Parents: []string{"nap"}},
		},
	}
	var ran []string
	wf, err := h.Engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"a": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			ran = append(ran, "a")
			return json.RawMessage(`{"v":1}`), nil
		},
		"b": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			ran = append(ran, "b")
			return nil, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(t.Context(), json.RawMessage(`{"n":1}`))
	if res == nil || res.Status != runtime.RunRunning {
		t.Fatalf("Run = %+v, %v; want a run sleeping", res, err)
	}
	h.Advance(24 * time.Hour)
	res, err = wf.Wait(t.Context(), res.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("after 24h: %+v, %v", res, err)
	}
	t.Log(ran, h.Trail(res.ID, "nap"), h.Trail(res.ID, "a"))
	if _, err := wf.Trigger(t.Context(), json.RawMessage(`{"n":"x"}`)); err == nil {
		t.Fatal("bad input accepted")
	} else {
		t.Log(err)
	}
}
