package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrInvalidInput is matched by an *InputError: the run input does not
	// satisfy the workflow's input schema, and nothing was written.
	ErrInvalidInput = errors.New("invalid run input")
	// ErrInvalidOutput is matched by an *OutputError: a step returned an
	// output that does not satisfy its output schema.
	ErrInvalidOutput = errors.New("invalid step output")
	// ErrInvalidEvent is matched by an *EventError: an event's payload
	// does not satisfy the event's schema, and nothing was sent.
	ErrInvalidEvent = errors.New("invalid event payload")
	// ErrInvalidIdentifier is matched by the error for a tenant or an
	// idempotency key that is not valid UTF-8 or holds a NUL byte (one
	// over its size limit is a *LimitError).
	ErrInvalidIdentifier = errors.New("invalid tenant or idempotency key")
	// ErrRunFailed is matched by a *RunFailedError returned by Run and Wait
	// when a step failed permanently.
	ErrRunFailed = errors.New("run failed")
	// ErrRunCancelled is returned by Run and Wait for a cancelled run.
	ErrRunCancelled = errors.New("run cancelled")
	// ErrRunNotFound is returned for a run id the store does not know.
	ErrRunNotFound = errors.New("run not found")
	// ErrNotRetryable is returned by RetryRun for a run that has not failed
	// or been cancelled.
	ErrNotRetryable = errors.New("run is not failed or cancelled")
	// ErrNotRerunnable is returned by RerunRun for a run that is still
	// running: only a finished run can be rerun from a step.
	ErrNotRerunnable = errors.New("run is not finished")
	// ErrUnknownStep is matched by an *UnknownStepError: a step name the
	// run's workflow does not have.
	ErrUnknownStep = errors.New("unknown step")
	// ErrStillRunning is returned by Wait on an engine run by a Driver for
	// a run that cannot go on until the clock moves.
	ErrStillRunning = errors.New("run is still running")
	// ErrStopped is returned when the engine has been stopped.
	ErrStopped = errors.New("engine stopped")
)

// FieldProblem is one reason an input or output was refused.
type FieldProblem struct {
	// Field is the path of the offending value, such as input.items[0].sku
	// or output.score.
	Field   string
	Message string
}

// joinProblems says what the problems are: the first maxProblemsShown
// of them, and how many more there are (a huge input may have a
// problem for each of a hundred thousand items).
func joinProblems(problems []FieldProblem) string {
	shown := problems[:min(len(problems), maxProblemsShown)]
	parts := make([]string, len(shown), len(shown)+1)
	for i, p := range shown {
		parts[i] = p.Field + ": " + p.Message
	}
	if more := len(problems) - len(shown); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, "; ")
}

// maxProblemsShown is how many problems an error's message lists.
const maxProblemsShown = 20

// InputError lists every problem found in a run input.
type InputError struct {
	Workflow string
	Problems []FieldProblem
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid input for workflow %s: %s", e.Workflow, joinProblems(e.Problems))
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// OutputError lists every problem found in a step's output. The attempt
// that returned it fails for good: retrying the same code is not expected
// to return a different shape, and the step's children never see it.
type OutputError struct {
	Workflow string
	Step     string
	Problems []FieldProblem
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("step %s returned an output that does not match its schema: %s", e.Step, joinProblems(e.Problems))
}

// Is makes errors.Is(err, ErrInvalidOutput) true.
func (e *OutputError) Is(target error) bool { return target == ErrInvalidOutput }

// EventError lists every problem found in an event's payload.
type EventError struct {
	Workflow string
	Event    string
	Problems []FieldProblem
}

func (e *EventError) Error() string {
	return fmt.Sprintf("invalid payload for event %s of workflow %s: %s", e.Event, e.Workflow, joinProblems(e.Problems))
}

// Is makes errors.Is(err, ErrInvalidEvent) true.
func (e *EventError) Is(target error) bool { return target == ErrInvalidEvent }

// RunFailedError tells which step made a run fail, and why.
type RunFailedError struct {
	RunID RunID
	// Step is the name of the step that failed permanently; empty when
	// no step did: the run's deadline passed (see Deadline).
	Step string
	// Message is the error the step's last attempt returned, or, for a
	// run whose deadline passed, "run deadline of 1h0m0s passed".
	Message string
	// Deadline is true when the run failed because its deadline (the
	// workflow's timeout, or WithTimeout) passed.
	Deadline bool
}

func (e *RunFailedError) Error() string {
	if e.Deadline {
		return fmt.Sprintf("run %s failed: %s", e.RunID, e.Message)
	}
	return fmt.Sprintf("run %s failed: step %s: %s", e.RunID, e.Step, e.Message)
}

// Is makes errors.Is(err, ErrRunFailed) true, and, for a run whose
// deadline passed, errors.Is(err, context.DeadlineExceeded).
func (e *RunFailedError) Is(target error) bool {
	return target == ErrRunFailed || e.Deadline && target == context.DeadlineExceeded
}

// NonRetryableError marks a step error that must not be retried.
type NonRetryableError struct{ Err error }

func (e *NonRetryableError) Error() string { return e.Err.Error() }
func (e *NonRetryableError) Unwrap() error { return e.Err }

// NonRetryable wraps err so that the step fails at once, whatever its retry
// policy says. Use it for errors no retry can fix, such as a declined card.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &NonRetryableError{Err: err}
}

// IsRetryable reports whether err may be retried: it is not, or does not
// wrap, a NonRetryableError.
func IsRetryable(err error) bool {
	var nr *NonRetryableError
	return !errors.As(err, &nr)
}

// UnknownStepError names a step a workflow does not have, with a guess at
// the step meant when one is close.
type UnknownStepError struct {
	Workflow string
	Step     string
	msg      string
}

func (e *UnknownStepError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrUnknownStep) true.
func (e *UnknownStepError) Is(target error) bool { return target == ErrUnknownStep }
