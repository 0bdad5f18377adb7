package runtime

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// RunID identifies a run.
type RunID = uuid.UUID

// ParseRunID parses the text form of a run id.
func ParseRunID(s string) (RunID, error) { return uuid.Parse(s) }

// StepFunc is the untyped form of a step's code, which generated code
// adapts the typed Steps interface to with Step, StepNoOutput, RootStep
// and RootStepNoOutput. It receives the run input and its
// parents' outputs as JSON and returns its own output as JSON (nil for a
// step without output).
type StepFunc func(ctx context.Context, req *StepRequest) (json.RawMessage, error)

// StepRequest is what a step attempt is given.
type StepRequest struct {
	Info StepInfo
	// Input is the run input.
	Input json.RawMessage
	// Parents holds the outputs of the step's completed parents, by name. A
	// skipped parent is absent; a completed parent without output maps to
	// nil.
	Parents map[string]json.RawMessage
}

// Parent returns a parent's output and whether that parent completed (as
// opposed to being skipped).
func (r *StepRequest) Parent(name string) (json.RawMessage, bool) {
	out, ok := r.Parents[name]
	return out, ok
}

// FailureFunc is the untyped form of a workflow's failure handler.
type FailureFunc func(ctx context.Context, req *FailureRequest) error

// FailureRequest is what the failure handler is given.
type FailureRequest struct {
	Info StepInfo
	// Input is the run input.
	Input json.RawMessage
	// Failure says which step failed and why.
	Failure Failure
}

// Failure describes the permanent failure of a step: the step's name and
// the error its last attempt returned. It is the store's run failure,
// whose step name the engine fills in.
type Failure = store.RunFailure

// StepInfo describes the attempt being executed. Step code also finds it
// in its context with InfoFromContext.
type StepInfo struct {
	RunID    RunID
	Workflow string
	Tenant   string
	Step     string
	// Attempt names this execution of the step, as the run's event log
	// names it (its STARTED and the result recorded for it). It counts
	// from 1 and every claim of the task takes the next number, whatever
	// the reason: a retry after a failure, a recovery after its worker
	// died, a hand-back, a retry of the whole run. No two executions share
	// a number, and a result is recorded only for the attempt that
	// produced it, so Attempt with RunID and Step identifies the execution
	// whose result children read (a good idempotency key for a side
	// effect that must happen once per execution).
	Attempt int
	// Retries is how many earlier attempts count against the step's
	// maxRetries in the run's current try: 0 on the first. Failures count,
	// and so do recoveries of a task whose worker died while it ran (its
	// code may have run); a task handed back before its code ran does
	// not, and retrying the run starts again from 0. The last attempt the
	// budget allows has Retries == maxRetries.
	Retries int
}

type infoKey struct{}

// InfoFromContext returns the StepInfo of the attempt a step's context
// belongs to.
func InfoFromContext(ctx context.Context) (StepInfo, bool) {
	info, ok := ctx.Value(infoKey{}).(StepInfo)
	return info, ok
}

func withInfo(ctx context.Context, info StepInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// Handlers is the code of a workflow: one StepFunc per code step, by step
// name, and the failure handler if the workflow declares one.
type Handlers struct {
	Steps     map[string]StepFunc
	OnFailure FailureFunc
}
