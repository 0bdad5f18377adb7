package ops

import (
	"context"
	"errors"

	"github.com/effectivelabs/trellis/runtime"
)

// Outcome is what Cancel or Retry did to one run.
type Outcome string

// Outcomes of Cancel and Retry.
const (
	// Cancelled: the run was running and is now cancelled.
	Cancelled Outcome = "cancelled"
	// AlreadyEnded: the run had already ended; Cancel left it as it was.
	AlreadyEnded Outcome = "already ended"
	// Retried: the failed or cancelled run is running again.
	Retried Outcome = "retried"
	// NotRetryable: the run is running or completed; Retry left it as it
	// was.
	NotRetryable Outcome = "not retryable"
	// NotFound: no run has the id.
	NotFound Outcome = "not found"
	// Failed: the store failed; Error says how. The run may or may not
	// have changed.
	Failed Outcome = "error"
)

// ActionResult is what Cancel or Retry did to one run.
type ActionResult struct {
	Run     runtime.RunID `json:"run"`
	Outcome Outcome       `json:"outcome"`
	// Status is the run's status when nothing was done to it
	// (AlreadyEnded, NotRetryable).
	Status runtime.RunStatus `json:"status,omitempty"`
	// Error is the store's error (Failed).
	Error string `json:"error,omitempty"`
}

// OK reports whether the run ended up as asked or already was: false for a
// run that does not exist or an error.
func (r ActionResult) OK() bool { return r.Outcome != NotFound && r.Outcome != Failed }

// Cancel cancels each running run: its unfinished steps are cancelled and
// the workers running its steps stop them. Runs that already ended are
// left as they are. It returns one result per id, in order.
func (a *Admin) Cancel(ctx context.Context, ids ...runtime.RunID) []ActionResult {
	out := make([]ActionResult, len(ids))
	for i, id := range ids {
		ok, err := a.engine.CancelRun(ctx, id)
		switch {
		case err != nil:
			out[i] = a.failed(id, err)
		case ok:
			out[i] = ActionResult{Run: id, Outcome: Cancelled}
		default:
			out[i] = a.unchanged(ctx, id, AlreadyEnded)
		}
	}
	return out
}

// Retry gives each failed or cancelled run another go from the steps that
// did not complete, keeping the outputs of those that did (see
// runtime.Engine.RetryRun). Running and completed runs are left as they
// are. It returns one result per id, in order.
func (a *Admin) Retry(ctx context.Context, ids ...runtime.RunID) []ActionResult {
	out := make([]ActionResult, len(ids))
	for i, id := range ids {
		err := a.engine.RetryRun(ctx, id)
		switch {
		case err == nil:
			out[i] = ActionResult{Run: id, Outcome: Retried}
		case errors.Is(err, runtime.ErrNotRetryable):
			out[i] = a.unchanged(ctx, id, NotRetryable)
		default:
			out[i] = a.failed(id, err)
		}
	}
	return out
}

// unchanged reports a run left as it was, with its status.
func (a *Admin) unchanged(ctx context.Context, id runtime.RunID, o Outcome) ActionResult {
	r, err := a.store.GetRun(ctx, id)
	if err != nil {
		return a.failed(id, notFound(err, id))
	}
	return ActionResult{Run: id, Outcome: o, Status: r.Status}
}

func (a *Admin) failed(id runtime.RunID, err error) ActionResult {
	if errors.Is(err, runtime.ErrRunNotFound) {
		return ActionResult{Run: id, Outcome: NotFound}
	}
	return ActionResult{Run: id, Outcome: Failed, Error: err.Error()}
}
