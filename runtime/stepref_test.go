package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
)

// stepRefResult is a run of workflow wf: a completed with an output, b
// completed with one that does not decode, c skipped, d completed without
// an output, e still pending.
func stepRefResult() *runtime.RunResult {
	return &runtime.RunResult{
		Workflow: "wf",
		Steps: map[string]runtime.TaskStatus{
			"a": runtime.TaskCompleted, "b": runtime.TaskCompleted, "c": runtime.TaskSkipped,
			"d": runtime.TaskCompleted, "e": runtime.TaskPending,
		},
		Outputs: map[string]json.RawMessage{"a": json.RawMessage(`{"v":1}`), "b": json.RawMessage(`[]`)},
	}
}

func TestOutput(t *testing.T) {
	res := stepRefResult()
	tests := []struct {
		step    string
		want    adaptOut
		ok      bool
		errText string
	}{
		{step: "a", want: adaptOut{V: 1}, ok: true},
		{step: "b", ok: true, errText: "decoding output of step b: "},
		{step: "c"},
		{step: "d", ok: true},
		{step: "e"},
		{step: "unknown"},
	}
	for _, tt := range tests {
		got, ok, err := runtime.Output(res, runtime.NewStepRef[adaptOut]("wf", tt.step))
		if got != tt.want || ok != tt.ok {
			t.Errorf("Output(%s) = %+v, %v; want %+v, %v", tt.step, got, ok, tt.want, tt.ok)
		}
		if (err != nil) != (tt.errText != "") || (err != nil && !strings.HasPrefix(err.Error(), tt.errText)) {
			t.Errorf("Output(%s) error = %v, want prefix %q", tt.step, err, tt.errText)
		}
	}
	if _, ok, err := runtime.Output(res, runtime.NewStepRef[adaptOut]("other", "a")); ok || err == nil {
		t.Errorf("a reference to a step of another workflow: ok %v, error %v; want an error", ok, err)
	}
}

// TestDecodeOutput checks that DecodeOutput, which generated results use,
// reads exactly what Output reads: nil unless the step completed, and a
// decoding error collected rather than returned.
func TestDecodeOutput(t *testing.T) {
	res := stepRefResult()
	var errs []error
	if got := runtime.DecodeOutput(res, runtime.NewStepRef[adaptOut]("wf", "a"), &errs); got == nil || got.V != 1 {
		t.Errorf("a = %+v, want V=1", got)
	}
	for _, step := range []string{"c", "e"} {
		if got := runtime.DecodeOutput(res, runtime.NewStepRef[adaptOut]("wf", step), &errs); got != nil {
			t.Errorf("%s = %+v, want nil: it did not complete", step, got)
		}
	}
	if got := runtime.DecodeOutput(res, runtime.NewStepRef[adaptOut]("wf", "d"), &errs); got == nil || *got != (adaptOut{}) {
		t.Errorf("d = %+v, want the zero output: it completed without one", got)
	}
	if len(errs) != 0 {
		t.Fatalf("errors before b: %v", errs)
	}
	if got := runtime.DecodeOutput(res, runtime.NewStepRef[adaptOut]("wf", "b"), &errs); got == nil || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "decoding output of step b: ") {
		t.Errorf("b = %+v, errs = %v; want one error naming b", got, errs)
	}
	errs = nil
	if got := runtime.DecodeOutput(res, runtime.NewStepRef[adaptOut]("other", "a"), &errs); got != nil || len(errs) != 1 {
		t.Errorf("a step of another workflow = %+v, errs = %v; want nil and an error", got, errs)
	}
}

func TestStepRefStatus(t *testing.T) {
	res := stepRefResult()
	ref := runtime.NewStepRef[runtime.NoOutput]("wf", "c")
	if ref.Name() != "c" || ref.Workflow() != "wf" {
		t.Errorf("ref names %s of %s", ref.Name(), ref.Workflow())
	}
	if got := ref.Status(res); got != runtime.TaskSkipped {
		t.Errorf("Status(c) = %q, want SKIPPED", got)
	}
	if got := runtime.NewStepRef[runtime.NoOutput]("wf", "unknown").Status(res); got != "" {
		t.Errorf("Status(unknown) = %q, want empty: the run has no such task", got)
	}
	if got := runtime.NewStepRef[runtime.NoOutput]("other", "c").Status(res); got != "" {
		t.Errorf("Status of a step of another workflow = %q, want empty", got)
	}
}
