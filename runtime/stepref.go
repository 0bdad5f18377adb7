package runtime

import (
	"encoding/json"
	"fmt"
)

// NoOutput is the output type of steps that declare none, and of failure
// handlers.
type NoOutput struct{}

// StepRef is the typed identity of a step of a workflow: T is the step's
// output type. Generated code declares one per step, and one for the
// failure handler, in <Workflow>Refs (OrderProcessingRefs.Charge()), and
// decodes its typed results through them; code outside the workflow uses
// them with Output, and tests with trellistest.Output, without naming a
// step as a string or its output type a second time.
type StepRef[T any] struct {
	workflow, step string
}

// NewStepRef makes a reference; generated code does this for every step.
func NewStepRef[T any](workflow, step string) StepRef[T] {
	return StepRef[T]{workflow: workflow, step: step}
}

// Name is the step's name.
func (r StepRef[T]) Name() string { return r.step }

// Workflow is the name of the step's workflow.
func (r StepRef[T]) Workflow() string { return r.workflow }

// Status is the status of the referenced step in a run: empty when the run
// has no task for it (it is a run of another workflow, or a failure
// handler that has not been needed).
func (r StepRef[T]) Status(res *RunResult) TaskStatus {
	if res.Workflow != "" && res.Workflow != r.workflow {
		return ""
	}
	return res.Steps[r.step]
}

// Output decodes the output of the referenced step from a run result. ok is
// false when the step did not complete (it was skipped, failed or has not
// run yet). An output that does not decode returns ok with the error and
// the partly decoded value; a result of another workflow is an error.
func Output[T any](res *RunResult, ref StepRef[T]) (out T, ok bool, err error) {
	if res.Workflow != "" && ref.workflow != res.Workflow {
		return out, false, fmt.Errorf("step %s belongs to workflow %s, not %s", ref.step, ref.workflow, res.Workflow)
	}
	if ref.Status(res) != TaskCompleted {
		return out, false, nil
	}
	raw := res.Outputs[ref.step]
	if len(raw) == 0 || string(raw) == "null" {
		return out, true, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, true, fmt.Errorf("decoding output of step %s: %w", ref.step, err)
	}
	return out, true, nil
}

// DecodeOutput is Output shaped for generated result types, which hold an
// output as a pointer and report every output that does not decode at
// once (a Client joins them to the run's error): it returns nil unless the
// step completed, and appends an error (naming the step) to errs,
// returning the partly decoded value, when the output does not decode.
func DecodeOutput[T any](res *RunResult, ref StepRef[T], errs *[]error) *T {
	out, ok, err := Output(res, ref)
	if err != nil {
		*errs = append(*errs, err)
	}
	if !ok {
		return nil
	}
	return &out
}
