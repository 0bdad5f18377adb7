package store

import "fmt"

// Kind tells how a task is executed.
type Kind int8

// Task kinds.
const (
	KindCode      Kind = iota // runs user code
	KindSleep                 // waits on a durable timer, no code
	KindOnFailure             // the run's failure handler
	KindWait                  // waits for an event, no code
	KindMap                   // runs one child run per element of a list, then collects their outputs
	KindChild                 // runs code that builds a child workflow's input, then waits for that run
)

// Wakes reports whether tasks of the kind wait between their claims (a
// sleep on its timer, a map or child step on its child runs, a wait step
// for its event) and are then claimed again woken, only to be completed;
// a store knows a woken task by its wake time being set (Task.WakeAt).
func (k Kind) Wakes() bool { return k == KindSleep || k == KindMap || k == KindChild || k == KindWait }

// RunsNoCode reports whether claiming tasks of the kind runs no user
// code, so that losing their worker costs them no attempt.
func (k Kind) RunsNoCode() bool { return k == KindSleep || k == KindMap || k == KindWait }

func (k Kind) String() string {
	switch k {
	case KindCode:
		return "code"
	case KindSleep:
		return "sleep"
	case KindOnFailure:
		return "onFailure"
	case KindWait:
		return "wait"
	case KindMap:
		return "map"
	case KindChild:
		return "child"
	}
	return fmt.Sprintf("Kind(%d)", int8(k))
}

// TaskStatus is where a task is in its life.
type TaskStatus string

// Task statuses. A task is created PENDING (or QUEUED when it has no
// parents), is claimed (RUNNING), may wait (SLEEPING for a sleep step,
// RETRYING during a retry backoff, WAITING for child runs) and ends
// COMPLETED, SKIPPED, FAILED or CANCELLED.
const (
	TaskPending   TaskStatus = "PENDING"
	TaskQueued    TaskStatus = "QUEUED"
	TaskRunning   TaskStatus = "RUNNING"
	TaskSleeping  TaskStatus = "SLEEPING"
	TaskRetrying  TaskStatus = "RETRYING"
	TaskWaiting   TaskStatus = "WAITING"
	TaskCompleted TaskStatus = "COMPLETED"
	TaskSkipped   TaskStatus = "SKIPPED"
	TaskFailed    TaskStatus = "FAILED"
	TaskCancelled TaskStatus = "CANCELLED"
)

// Resolved reports whether a task counts as done for its children:
// COMPLETED or SKIPPED.
func (s TaskStatus) Resolved() bool { return s == TaskCompleted || s == TaskSkipped }

// Live reports whether the task is on its way: queued, running, or
// waiting on a timer, child runs or an event. A PENDING task is not: it
// waits for its parents, and never starts in a run that has ended.
func (s TaskStatus) Live() bool {
	switch s {
	case TaskQueued, TaskRunning, TaskSleeping, TaskRetrying, TaskWaiting:
		return true
	}
	return false
}

// Terminal reports whether the task will not change again (unless its run
// is retried).
func (s TaskStatus) Terminal() bool {
	return s.Resolved() || s == TaskFailed || s == TaskCancelled
}

// RunStatus is where a run is in its life.
type RunStatus string

// Run statuses. RUNNING is the only non-terminal one.
const (
	RunRunning   RunStatus = "RUNNING"
	RunCompleted RunStatus = "COMPLETED"
	RunFailed    RunStatus = "FAILED"
	RunCancelled RunStatus = "CANCELLED"
)

// Terminal reports whether the run has ended.
func (s RunStatus) Terminal() bool { return s != RunRunning }

// EventType names a state change in a run's event log.
type EventType string

// Event types, one per state change of a task.
const (
	EventQueued    EventType = "QUEUED"
	EventStarted   EventType = "STARTED"
	EventCompleted EventType = "COMPLETED"
	EventFailed    EventType = "FAILED"
	EventRetrying  EventType = "RETRYING"
	EventSkipped   EventType = "SKIPPED"
	EventSleeping  EventType = "SLEEPING"
	EventWoken     EventType = "WOKEN"
	EventWaiting   EventType = "WAITING"
	EventCancelled EventType = "CANCELLED"
	EventTimedOut  EventType = "TIMED_OUT"
)
