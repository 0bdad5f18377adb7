package runtime

import (
	"context"
	"encoding/json"
	"errors"
)

var errRunInTx = errors.New("Run cannot wait inside a transaction: the run only exists once the transaction commits; use RunNoWait with the transaction, commit, then Wait")

// Engine executes workflows against a store.
type Engine struct{}

// Register compiles a workflow and registers its code, so that this engine
// executes the workflow's steps.
func (e *Engine) Register(spec *WorkflowSpec, h Handlers) (*Workflow, error) {
	panic("unimplemented")
}

// Workflow compiles a workflow for triggering only.
func (e *Engine) Workflow(spec *WorkflowSpec) (*Workflow, error) {
	panic("unimplemented")
}

func (e *Engine) trigger(ctx context.Context, def *Definition, input json.RawMessage, o RunOptions) (RunRef, error) {
	panic("unimplemented")
}

// Wait waits until the run ends and returns its result.
func (e *Engine) Wait(ctx context.Context, id RunID) (*RunResult, error) {
	panic("unimplemented")
}
