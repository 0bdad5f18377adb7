package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// RunStatus is the status of a run: RUNNING, COMPLETED, FAILED or
// CANCELLED.
type RunStatus = store.RunStatus

// Run statuses.
const (
	RunRunning   = store.RunRunning
	RunCompleted = store.RunCompleted
	RunFailed    = store.RunFailed
	RunCancelled = store.RunCancelled
)

// TaskStatus is the status of one step within a run.
type TaskStatus = store.TaskStatus

// Task statuses. A task is created PENDING (or QUEUED when it has no
// parents), is claimed (RUNNING), may wait (SLEEPING for a sleep step,
// RETRYING during a retry backoff, WAITING for child runs or an event)
// and ends COMPLETED, SKIPPED, FAILED or CANCELLED.
const (
	TaskPending   = store.TaskPending
	TaskQueued    = store.TaskQueued
	TaskRunning   = store.TaskRunning
	TaskSleeping  = store.TaskSleeping
	TaskRetrying  = store.TaskRetrying
	TaskWaiting   = store.TaskWaiting
	TaskCompleted = store.TaskCompleted
	TaskSkipped   = store.TaskSkipped
	TaskFailed    = store.TaskFailed
	TaskCancelled = store.TaskCancelled
)

// EventType names a state change in a run's event log.
type EventType = store.EventType

// Event types, one per state change of a task.
const (
	EventQueued    = store.EventQueued
	EventStarted   = store.EventStarted
	EventCompleted = store.EventCompleted
	EventFailed    = store.EventFailed
	EventRetrying  = store.EventRetrying
	EventSkipped   = store.EventSkipped
	EventSleeping  = store.EventSleeping
	EventWaiting   = store.EventWaiting
	EventWoken     = store.EventWoken
	EventCancelled = store.EventCancelled
	EventTimedOut  = store.EventTimedOut
)

// RunRef refers to a run that was triggered.
type RunRef struct {
	ID       RunID
	Workflow string
	// Existing is true when an idempotency key matched an earlier run, and
	// that run was returned instead of creating a new one.
	Existing bool
}

// RunResult is the state of a run, with the outputs of its completed steps.
type RunResult struct {
	ID       RunID
	Workflow string
	Tenant   string
	// Priority is the run's priority, PriorityLow to PriorityHigh.
	Priority int
	Status   RunStatus
	// Steps holds the status of every step by name.
	Steps map[string]TaskStatus
	// Outputs holds the output of every completed step that has one.
	Outputs map[string]json.RawMessage
	// Failure is set when the run failed.
	Failure *Failure
	// Parent is set for a run a step started: an item of a map step, or
	// the run of a child workflow step (see Engine.ChildRuns).
	Parent *ParentRun
	// Tags are the run's tags (see Tags): those it was triggered with,
	// and its parent run's; nil for none.
	Tags map[string]string
	// Waiting is true while the run, RUNNING, waits for a slot of its
	// workflow's runConcurrency key: none of its steps starts until a run
	// of its key ends.
	Waiting bool
	// DebouncedUntil is, while the run waits for its workflow's debounce
	// window, when it starts unless a newer trigger of its key cancels
	// it; zero otherwise.
	DebouncedUntil time.Time
}

// ParentRun names the run whose step started a run, and the run's place
// among the runs that step started. Its Step (the step's name) is filled
// in where the parent's workflow version is read anyway (ops.Admin's
// GetRun); it is empty in RunResult and in listings, which read no other
// run.
type ParentRun = store.ParentRun

// Final reports whether the result will not change again (unless the
// run is retried): the run has ended, and so has every step of it that
// was still live when it ended, its failure handler above all. Run, Wait
// and WaitMany return only final results; Engine.Result returns the
// current state, which may not be final yet.
func (r *RunResult) Final() bool {
	if !r.Status.Terminal() {
		return false
	}
	for _, s := range r.Steps {
		if s.Live() {
			return false
		}
	}
	return true
}

// Err is the error Run and Wait return for the result: nil for a completed
// run, a *RunFailedError for a failed one, ErrRunCancelled for a cancelled
// one.
func (r *RunResult) Err() error {
	switch r.Status {
	case RunFailed:
		f := Failure{}
		if r.Failure != nil {
			f = *r.Failure
		}
		return &RunFailedError{RunID: r.ID, Step: f.Step, Message: f.Error, Deadline: r.Failure != nil && f.StepIndex < 0}
	case RunCancelled:
		return fmt.Errorf("run %s: %w", r.ID, ErrRunCancelled)
	case RunRunning:
		return fmt.Errorf("run %s: %w", r.ID, ErrStillRunning)
	}
	return nil
}
