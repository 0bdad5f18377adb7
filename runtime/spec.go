package runtime

import "github.com/effectivelabs/trellis/schema/spec"

// The model of a workflow lives in package spec, which the generator and
// the engine share; these are its names as generated code uses them.

// WorkflowSpec is the declarative form of a workflow (see spec.Workflow).
type WorkflowSpec = spec.Workflow

// StepSpec declares one step of a workflow (see spec.Step).
type StepSpec = spec.Step

// OnFailureSpec declares the failure handler of a workflow (see
// spec.OnFailure).
type OnFailureSpec = spec.OnFailure

// ScheduleSpec is a cron schedule of a workflow (see spec.Schedule).
type ScheduleSpec = spec.Schedule

// ConcurrencySpec is a concurrency limit by key (see spec.Concurrency).
type ConcurrencySpec = spec.Concurrency

// RunConcurrencySpec is a concurrency limit on whole runs by key (see
// spec.RunConcurrency).
type RunConcurrencySpec = spec.RunConcurrency

// DebounceSpec lets only the last trigger of a key within a window run
// (see spec.Debounce).
type DebounceSpec = spec.Debounce

// RateLimitSpec is a rate limit by key (see spec.RateLimit).
type RateLimitSpec = spec.RateLimit

// ForEachSpec is the items of a map step (spec.ForEach).
type ForEachSpec = spec.ForEach

// RetryPolicy says how often and how soon a failed attempt is retried (see
// spec.RetryPolicy).
type RetryPolicy = spec.RetryPolicy

// DefaultRetryPolicy is the policy of a step whose file says nothing about
// retries (see spec.DefaultRetryPolicy).
func DefaultRetryPolicy() RetryPolicy { return spec.DefaultRetryPolicy() }

// Run priorities (see WithPriority and the workflow's priority field).
const (
	PriorityLow    = spec.PriorityLow
	PriorityNormal = spec.PriorityNormal
	PriorityHigh   = spec.PriorityHigh
)

// ValidPriority reports whether p is a run priority, PriorityLow to
// PriorityHigh.
func ValidPriority(p int) bool { return spec.ValidPriority(p) }

// ChildWorkflowSpec declares the run a child workflow step starts (see
// spec.ChildWorkflow).
type ChildWorkflowSpec = spec.ChildWorkflow

// WaitForSpec declares the event a wait step waits for (see
// spec.WaitFor).
type WaitForSpec = spec.WaitFor

// EventSpec declares an event and its payload schema (see spec.Event).
type EventSpec = spec.Event

// StartOnSpec declares an event that starts runs of its workflow (see
// spec.StartOn).
type StartOnSpec = spec.StartOn
