package runtime

import (
	"context"
	"encoding/json"
	"fmt"
)

// Workflow is a compiled workflow bound to an engine: it triggers runs and
// reads their results as JSON. A Client wraps one to speak the workflow's
// Go types, as generated clients do. Get one from Engine.Register (in
// processes that execute the workflow's steps) or Engine.Workflow (in
// processes that only trigger runs).
type Workflow struct {
	engine *Engine
	def    *Definition
}

// Definition is the compiled definition of the workflow.
func (w *Workflow) Definition() *Definition { return w.def }

// Name is the workflow's name.
func (w *Workflow) Name() string { return w.def.Name() }

// Trigger validates input against the input schema and creates a run; it
// returns as soon as the run is stored. Invalid input is refused with an
// *InputError and nothing is written.
func (w *Workflow) Trigger(ctx context.Context, input json.RawMessage, opts ...RunOption) (RunRef, error) {
	return w.engine.trigger(ctx, w.def, input, runOptions(opts))
}

// TriggerMany creates one run per input, all with the same options, in
// one transaction: every input is validated first, and either all the
// runs are created or none is. It is the fast way to start many runs.
// Idempotency keys are given per input, with WithIdempotencyKeys (which
// only TriggerMany accepts; WithIdempotencyKey, which names one run, is
// refused): an input whose key an earlier run holds gets that run back,
// with RunRef.Existing set, and the others are created. The refs are in
// the order of inputs.
func (w *Workflow) TriggerMany(ctx context.Context, inputs []json.RawMessage, opts ...RunOption) ([]RunRef, error) {
	return w.engine.triggerMany(ctx, w.def, inputs, runOptions(opts))
}

// Run triggers a run and waits until it ends. The result is returned
// whenever the run ended; the error is the result's Err (nil when the run
// completed).
func (w *Workflow) Run(ctx context.Context, input json.RawMessage, opts ...RunOption) (*RunResult, error) {
	o := runOptions(opts)
	if o.Tx != nil {
		return nil, errRunInTx
	}
	ref, err := w.engine.trigger(ctx, w.def, input, o)
	if err != nil {
		return nil, err
	}
	return w.engine.Wait(ctx, ref.ID)
}

// Wait waits until the run ends and returns its result; see Run. A run
// of another workflow is refused with ErrRunNotFound, as Result refuses
// it: its outputs would not be this workflow's.
func (w *Workflow) Wait(ctx context.Context, id RunID) (*RunResult, error) {
	res, err := w.engine.Wait(ctx, id)
	if res != nil && res.Workflow != w.Name() {
		return nil, w.foreign(res)
	}
	return res, err
}

// WaitMany waits until every run of ids has ended and returns their
// results in the order of ids; see Engine.WaitMany. Runs of another
// workflow are refused with ErrRunNotFound, as Wait refuses them.
func (w *Workflow) WaitMany(ctx context.Context, ids []RunID) ([]*RunResult, error) {
	results, err := w.engine.WaitMany(ctx, ids)
	for _, res := range results {
		if res != nil && res.Workflow != w.Name() {
			return nil, w.foreign(res)
		}
	}
	return results, err
}

func (w *Workflow) foreign(res *RunResult) error {
	return fmt.Errorf("run %s is a run of workflow %s, not %s: %w", res.ID, res.Workflow, w.Name(), ErrRunNotFound)
}

// Result returns the current state of a run of this workflow without
// waiting: the run may still be running, its steps' statuses say how far
// it got, and only completed steps have outputs. The error is about
// reading the run, never about how it ended (see RunResult.Err for that):
// ErrRunNotFound for an id the store does not know, or for a run of
// another workflow, whose outputs would not be this workflow's.
func (w *Workflow) Result(ctx context.Context, id RunID) (*RunResult, error) {
	res, err := w.engine.Result(ctx, id)
	if err != nil {
		return nil, err
	}
	if res.Workflow != w.Name() {
		return nil, w.foreign(res)
	}
	return res, nil
}

// Rerun reruns a finished run of this workflow from step from, as
// Engine.RerunRun does. A run of another workflow is refused with
// ErrRunNotFound.
func (w *Workflow) Rerun(ctx context.Context, id RunID, from string) error {
	run, err := w.engine.store.GetRun(ctx, id)
	if err != nil {
		return storeErr(err, id)
	}
	if run.Workflow != w.Name() {
		return w.foreign(&RunResult{ID: id, Workflow: run.Workflow})
	}
	return w.engine.RerunRun(ctx, id, from)
}
