package runtime

import "github.com/effectivelabs/trellis/runtime/spec"

// The model of a workflow lives in package spec, which the generator and
// the engine share; these are its names as generated code uses them.

// WorkflowSpec is the declarative form of a workflow (see spec.Workflow).
type WorkflowSpec = spec.Workflow

// StepSpec declares one step of a workflow (see spec.Step).
type StepSpec = spec.Step

// OnFailureSpec declares the failure handler of a workflow (see
// spec.OnFailure).
type OnFailureSpec = spec.OnFailure

// RetryPolicy says how often and how soon a failed attempt is retried (see
// spec.RetryPolicy).
type RetryPolicy = spec.RetryPolicy

// DefaultRetryPolicy is the policy of a step whose file says nothing about
// retries (see spec.DefaultRetryPolicy).
func DefaultRetryPolicy() RetryPolicy { return spec.DefaultRetryPolicy() }
