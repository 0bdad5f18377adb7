package ops

import (
	"context"
	"errors"
	"sync"

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

// actParallel is how many runs Cancel and Retry act on at once: each
// takes a few round trips to the store, and a bulk action over thousands
// of runs would otherwise wait for them one after another.
const actParallel = 4

// each calls act for every id, actParallel at a time, and returns the
// results in the order of ids. An id given again is acted on again after
// the others, in order, so that its results read as if one followed the
// other ("cancelled", then "already ended").
func each(ids []runtime.RunID, act func(runtime.RunID) ActionResult) []ActionResult {
	out := make([]ActionResult, len(ids))
	seen := make(map[runtime.RunID]bool, len(ids))
	var again []int
	sem := make(chan struct{}, actParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		if seen[id] {
			again = append(again, i)
			continue
		}
		seen[id] = true
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = act(id)
		}()
	}
	wg.Wait()
	for _, i := range again {
		out[i] = act(ids[i])
	}
	return out
}

// Cancel cancels each running run: its unfinished steps are cancelled and
// the workers running its steps stop them. Runs that already ended are
// left as they are. It returns one result per id, in order.
func (a *Admin) Cancel(ctx context.Context, ids ...runtime.RunID) []ActionResult {
	return each(ids, func(id runtime.RunID) ActionResult {
		ok, err := a.engine.CancelRun(ctx, id)
		switch {
		case err != nil:
			return a.failed(id, err)
		case ok:
			return ActionResult{Run: id, Outcome: Cancelled}
		default:
			return a.unchanged(ctx, id, AlreadyEnded)
		}
	})
}

// Retry gives each failed or cancelled run another go from the steps that
// did not complete, keeping the outputs of those that did (see
// runtime.Engine.RetryRun). Running and completed runs are left as they
// are. It returns one result per id, in order.
func (a *Admin) Retry(ctx context.Context, ids ...runtime.RunID) []ActionResult {
	return each(ids, func(id runtime.RunID) ActionResult {
		err := a.engine.RetryRun(ctx, id)
		switch {
		case err == nil:
			return ActionResult{Run: id, Outcome: Retried}
		case errors.Is(err, runtime.ErrNotRetryable):
			return a.unchanged(ctx, id, NotRetryable)
		default:
			return a.failed(id, err)
		}
	})
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
