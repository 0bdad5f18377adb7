package ops

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/effectivelabs/trellis/runtime"
)

// Outcome is what Cancel, Retry or Rerun did to one run.
type Outcome string

// Outcomes of Cancel, Retry and Rerun.
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
	// Rerun: the finished run runs again from the step given.
	Rerun Outcome = "rerun"
	// NotRerunnable: the run is running, its workflow version has no such
	// step, or it is a child run whose parent runs (Error says which of
	// the last two); Rerun left it as it was.
	NotRerunnable Outcome = "not rerunnable"
	// NotFound: no run has the id.
	NotFound Outcome = "not found"
	// Failed: the store failed; Error says how. The run may or may not
	// have changed.
	Failed Outcome = "error"
)

// ActionResult is what Cancel, Retry or Rerun did to one run.
type ActionResult struct {
	Run     runtime.RunID `json:"run"`
	Outcome Outcome       `json:"outcome"`
	// Status is the run's status when nothing was done to it
	// (AlreadyEnded, NotRetryable, NotRerunnable).
	Status runtime.RunStatus `json:"status,omitempty"`
	// Error is the store's error (Failed), or why a finished run was not
	// rerun (NotRerunnable: its workflow has no such step).
	Error string `json:"error,omitempty"`
}

// OK reports whether the run ended up as asked or already was: false for a
// run that does not exist, an error, or a rerun from a step its workflow
// does not have.
func (r ActionResult) OK() bool { return r.Outcome != NotFound && r.Outcome != Failed && r.Error == "" }

// actBatch is how many runs Cancel and Retry hand the engine at once: one
// read and one transaction per batch, however many runs. actParallel
// batches go at once (their runs differ, so they never wait for each
// other's locks).
var actBatch = 500

const actParallel = 2

// act calls do on the ids, actBatch distinct ids at a time, and returns one
// result per id, in order: done for the runs do changed, and for the
// others left with their status, or NotFound. An id given again is
// reported as left with its status after the first time's change.
func (a *Admin) act(ctx context.Context, ids []runtime.RunID, do func(context.Context, []runtime.RunID) ([]runtime.RunID, error), done, left Outcome) []ActionResult {
	out := make([]ActionResult, len(ids))
	first := make(map[runtime.RunID]int, len(ids))
	var distinct []runtime.RunID
	for i, id := range ids {
		if _, ok := first[id]; !ok {
			first[id] = i
			distinct = append(distinct, id)
		}
	}
	// Each batch writes the results of its own ids only.
	sem := make(chan struct{}, actParallel)
	var wg sync.WaitGroup
	for batch := range slices.Chunk(distinct, actBatch) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			changed, err := do(ctx, batch)
			if err != nil {
				for _, id := range batch {
					out[first[id]] = ActionResult{Run: id, Outcome: Failed, Error: err.Error()}
				}
				return
			}
			for _, id := range changed {
				out[first[id]] = ActionResult{Run: id, Outcome: done}
			}
		}()
	}
	wg.Wait()
	// Every other id, and each id given again, reads its status now; an
	// id whose batch failed failed each time it was given.
	rest := map[runtime.RunID][]int{}
	var restIDs []runtime.RunID
	for i, id := range ids {
		if f := out[first[id]]; f.Outcome == Failed {
			out[i] = f
			continue
		}
		if out[i].Outcome == "" {
			if rest[id] == nil {
				restIDs = append(restIDs, id)
			}
			rest[id] = append(rest[id], i)
		}
	}
	for batch := range slices.Chunk(restIDs, actBatch) {
		statuses, err := a.store.RunStatuses(ctx, batch)
		for _, id := range batch {
			r := ActionResult{Run: id, Outcome: left, Status: statuses[id]}
			switch {
			case err != nil:
				r = ActionResult{Run: id, Outcome: Failed, Error: err.Error()}
			case r.Status == "":
				r = ActionResult{Run: id, Outcome: NotFound}
			}
			for _, i := range rest[id] {
				out[i] = r
			}
		}
	}
	return out
}

// Cancel cancels each running run: its unfinished steps are cancelled and
// the workers running its steps stop them. Runs that already ended are
// left as they are. It returns one result per id, in order, and takes one
// transaction per actBatch runs.
func (a *Admin) Cancel(ctx context.Context, ids ...runtime.RunID) []ActionResult {
	return a.act(ctx, ids, a.engine.CancelRuns, Cancelled, AlreadyEnded)
}

// Retry gives each failed or cancelled run another go from the steps that
// did not complete, keeping the outputs of those that did (see
// runtime.Engine.RetryRun). Running and completed runs are left as they
// are. It returns one result per id, in order, and takes one read and one
// transaction per actBatch runs.
func (a *Admin) Retry(ctx context.Context, ids ...runtime.RunID) []ActionResult {
	return a.act(ctx, ids, a.engine.RetryRuns, Retried, NotRetryable)
}

// Rerun runs each finished run (completed, failed or cancelled) again from
// step from, with the steps below it (see runtime.Engine.RerunRun).
// Running runs are left as they are; so are runs whose workflow version
// has no step from, with the engine's error saying so (and guessing the
// step meant). It returns one result per id, in order, and takes one read
// and one transaction per actBatch runs, and one more read per workflow
// version without the step.
func (a *Admin) Rerun(ctx context.Context, from string, ids ...runtime.RunID) []ActionResult {
	out := a.act(ctx, ids, func(ctx context.Context, batch []runtime.RunID) ([]runtime.RunID, error) {
		return a.engine.RerunRuns(ctx, batch, from)
	}, Rerun, NotRerunnable)
	var left []runtime.RunID
	for _, r := range out {
		if r.Outcome == NotRerunnable && r.Status.Terminal() {
			left = append(left, r.Run)
		}
	}
	if len(left) == 0 {
		return out
	}
	// A finished run left as it was has no such step, or a parent run that
	// runs: the engine says why (once per workflow version for a step it
	// lacks).
	why := map[runtime.RunID]string{}
	byVersion := map[string]string{}
	for batch := range slices.Chunk(left, actBatch) {
		runs, err := a.store.GetRuns(ctx, batch)
		if err != nil {
			continue // their outcome stands, unexplained
		}
		for _, r := range runs {
			msg, ok := byVersion[r.Version]
			if !ok {
				// Asking the engine reruns the run if it can be rerun
				// after all (it was reopened and ended meanwhile).
				err := a.engine.RerunRun(ctx, r.ID, from)
				var unknown *runtime.UnknownStepError
				switch {
				case err == nil:
					why[r.ID] = string(Rerun)
					continue
				case errors.As(err, &unknown): // the same for every run of the version
					msg = unknown.Error()
					byVersion[r.Version] = msg
				default: // this run's own reason (its parent runs, say)
					msg = err.Error()
				}
			}
			why[r.ID] = msg
		}
	}
	for i, r := range out {
		switch msg := why[r.Run]; {
		case r.Outcome != NotRerunnable || !r.Status.Terminal() || msg == "":
		case msg == string(Rerun):
			out[i] = ActionResult{Run: r.Run, Outcome: Rerun}
			why[r.Run] = "" // given again: left as it is now
		default:
			out[i].Error = msg
		}
	}
	return out
}
