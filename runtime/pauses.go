package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/effectivelabs/trellis/runtime/store"
)

// WorkflowPause is one pause of a workflow, for every tenant (Tenant "")
// or for one, with the queued tasks it holds (Held, as PausedWorkflows
// counts them). It is the store's record, store.WorkflowPause.
type WorkflowPause = store.WorkflowPause

// PauseWorkflow pauses a workflow (by name: every version of it) for the
// tenants given, or for every tenant when none is. While it is paused no
// engine claims a task of its runs of those tenants: running steps go on
// and their results are recorded, but the tasks they make ready wait in
// the queue, in their place; triggers still create runs and queue their
// first steps; timers still fire (a sleep step still completes) and
// events still wake waits, and what they make ready waits too. Pausing
// what is paused changes nothing. The pause is kept in the store: it
// holds in every process sharing it, and across restarts, until
// ResumeWorkflow.
//
// The guarantee is exact: once PauseWorkflow returns, no claim of a
// paused task commits, on any engine. A claim an engine was making as it
// paused has committed before it returns; the task it took runs to its end.
//
// It returns the pauses it made (none for a workflow already paused so).
func (e *Engine) PauseWorkflow(ctx context.Context, workflow string, tenants ...string) ([]WorkflowPause, error) {
	if err := checkPause(workflow, tenants); err != nil {
		return nil, fmt.Errorf("pausing workflow: %w", err)
	}
	return e.store.PauseWorkflows(ctx, workflow, tenants, e.clock.Now())
}

// ResumeWorkflow lifts the pauses of a workflow for the tenants given, or
// every pause of it (for every tenant and for each) when none is: the
// tasks they held become claimable at once, in the queue's usual fair
// order, as if never held. A tenant whose workflow is also paused for
// every tenant stays paused until that pause is lifted too. It returns
// the pauses it lifted.
func (e *Engine) ResumeWorkflow(ctx context.Context, workflow string, tenants ...string) ([]WorkflowPause, error) {
	if err := checkPause(workflow, tenants); err != nil {
		return nil, fmt.Errorf("resuming workflow: %w", err)
	}
	return e.store.ResumeWorkflows(ctx, workflow, tenants)
}

// PausedWorkflows returns every pause, by workflow then tenant (the pause
// of every tenant first), each with the queued tasks it holds.
func (e *Engine) PausedWorkflows(ctx context.Context) ([]WorkflowPause, error) {
	return e.store.ListPauses(ctx)
}

// checkPause checks the arguments of PauseWorkflow and ResumeWorkflow.
func checkPause(workflow string, tenants []string) error {
	if workflow == "" {
		return errors.New("no workflow named")
	}
	if slices.Contains(tenants, "") {
		return errors.New(`tenant "": give no tenant to pause or resume every tenant`)
	}
	return nil
}
