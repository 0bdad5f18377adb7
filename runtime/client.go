package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Client is the typed client of one workflow: it triggers runs with an
// input of type In, waits for them and reads them as a Result, and
// manages the workflow's schedules. It is a Workflow that speaks Go types
// instead of JSON: it encodes inputs with encoding/json and decodes run
// results with the function it was made with.
//
// Generated code declares one per workflow file, as an alias
// (type OrderProcessingClient = runtime.Client[OrderProcessingInput,
// OrderProcessingResult]), and makes it with NewOrderProcessingClient or
// RegisterOrderProcessing; a workflow with events gets a struct that
// embeds it and adds a Signal<Event> and Send<Event> per event. Code
// that registers a spec by hand can make one with NewClient.
//
// A Client is safe for concurrent use.
type Client[In, Result any] struct {
	workflow *Workflow
	decode   func(*RunResult) (Result, error)
}

// NewClient returns the typed client of w. decode turns a run's state
// into a Result: it gets a non-nil *RunResult of w and returns the Result
// with an error when some output does not decode (the Result then holds
// what did decode). For a run WaitMany could not wait out (its context
// ended first), decode gets a RunResult holding only the run's ID.
// Generated code passes the <workflow>Result function it declares, which
// reads statuses and outputs through the step references (StepRef.Status,
// DecodeOutput).
//
// In cannot be inferred from the arguments, so a call names it:
// NewClient[OrderProcessingInput](w, orderProcessingResult).
func NewClient[In, Result any](w *Workflow, decode func(*RunResult) (Result, error)) *Client[In, Result] {
	return &Client[In, Result]{workflow: w, decode: decode}
}

// Workflow is the runtime handle of the workflow, for what the typed
// client does not cover (its Definition, Signal and Send with JSON).
func (c *Client[In, Result]) Workflow() *Workflow { return c.workflow }

// Run triggers a run and waits until it ends. When the run ends otherwise
// than completed, the result comes with the error (a *RunFailedError, or
// ErrRunCancelled). Options are those of Workflow.Trigger, but for WithTx:
// a run created in a transaction cannot be waited for before it commits,
// so Run refuses it (use RunNoWait, then Wait after the commit).
func (c *Client[In, Result]) Run(ctx context.Context, in In, opts ...RunOption) (Result, error) {
	raw, err := c.encodeInput(in)
	if err != nil {
		var zero Result
		return zero, err
	}
	res, err := c.workflow.Run(ctx, raw, opts...)
	return c.result(res, err)
}

// RunNoWait triggers a run and returns as soon as it is stored; Wait
// waits for its result. Invalid input is refused with an *InputError and
// nothing is written.
func (c *Client[In, Result]) RunNoWait(ctx context.Context, in In, opts ...RunOption) (RunRef, error) {
	raw, err := c.encodeInput(in)
	if err != nil {
		return RunRef{}, err
	}
	return c.workflow.Trigger(ctx, raw, opts...)
}

// RunManyNoWait triggers one run per input, all with the same options
// (WithIdempotencyKeys gives each input an idempotency key of its own),
// in one transaction: every input is validated first, and either every
// run is created or none is. The refs are in the order of inputs;
// WaitMany waits for them. See Workflow.TriggerMany.
func (c *Client[In, Result]) RunManyNoWait(ctx context.Context, inputs []In, opts ...RunOption) ([]RunRef, error) {
	raws := make([]json.RawMessage, len(inputs))
	for i, in := range inputs {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding %s input %d: %w", c.workflow.Name(), i, err)
		}
		raws[i] = raw
	}
	return c.workflow.TriggerMany(ctx, raws, opts...)
}

// Wait waits until a run ends and returns its result, with an error as
// Run returns one. A run of another workflow is refused with
// ErrRunNotFound.
func (c *Client[In, Result]) Wait(ctx context.Context, id RunID) (Result, error) {
	res, err := c.workflow.Wait(ctx, id)
	return c.result(res, err)
}

// WaitMany waits until every run of ids has ended and returns their
// results in the order of ids; each result's status and failure say how
// its run ended. It costs a few reads per wake-up however many runs it
// waits for (see Engine.WaitMany). The error is about waiting, not about
// how runs ended: the context ended (the runs that had ended have their
// results, the others only their ID), an id names no run of the workflow,
// the store failed, or an output did not decode.
func (c *Client[In, Result]) WaitMany(ctx context.Context, ids []RunID) ([]Result, error) {
	runs, err := c.workflow.WaitMany(ctx, ids)
	errs := []error{err}
	out := make([]Result, len(ids))
	for i, id := range ids {
		res := &RunResult{ID: id} // a run that has not ended: only its ID
		if i < len(runs) && runs[i] != nil {
			res = runs[i]
		}
		var decodeErr error
		out[i], decodeErr = c.decode(res)
		errs = append(errs, decodeErr)
	}
	return out, errors.Join(errs...)
}

// Result returns the current state of a run without waiting for it to
// end: its status says whether it is still running and its step statuses
// how far each step got; the output of a step that has not completed
// (not yet, or not at all) is nil. The error is about reading the run
// (ErrRunNotFound for an unknown id or a run of another workflow) or
// decoding an output, never about how the run ended: Wait returns that.
func (c *Client[In, Result]) Result(ctx context.Context, id RunID) (Result, error) {
	res, err := c.workflow.Result(ctx, id)
	return c.result(res, err)
}

// StepName names a step of a workflow. The step references generated
// code declares (StepRef, as in OrderProcessingRefs.Charge()) are step
// names, so a step is named without a string that could be misspelt.
type StepName interface {
	Workflow() string
	Name() string
}

// Rerun runs step from of a finished run of the workflow again, and every
// step below it, with the kept outputs of the steps above it; the run is
// running again until they end, and Wait returns its new result. See
// Engine.RerunRun for the rules and errors; a step of another workflow,
// or a run of one, is refused.
func (c *Client[In, Result]) Rerun(ctx context.Context, id RunID, from StepName) error {
	if from.Workflow() != c.workflow.Name() {
		return fmt.Errorf("step %s belongs to workflow %s, not %s: %w", from.Name(), from.Workflow(), c.workflow.Name(), ErrUnknownStep)
	}
	return c.workflow.Rerun(ctx, id, from.Name())
}

// CreateSchedule creates a cron schedule that starts a run with input at
// each tick of cron (five fields, or a descriptor such as @hourly or
// @every 15m), in UTC unless WithTimezone says otherwise, for the default
// tenant unless WithScheduleTenant says otherwise. The store keeps it,
// and every started engine that registered the workflow fires it, each
// tick starting one run. Creating a schedule that exists with the same
// settings changes nothing; with other settings, it updates it. A bad
// name, cron expression, time zone or input is refused with a
// *ScheduleError. See Workflow.CreateSchedule.
func (c *Client[In, Result]) CreateSchedule(ctx context.Context, name, cron string, in In, opts ...ScheduleOption) (Schedule, error) {
	raw, err := c.encodeInput(in)
	if err != nil {
		return Schedule{}, err
	}
	return c.workflow.CreateSchedule(ctx, name, cron, raw, opts...)
}

// Schedules returns the workflow's schedules created at run time, by
// name (those of the workflow file are in its spec).
func (c *Client[In, Result]) Schedules(ctx context.Context) ([]Schedule, error) {
	return c.workflow.engine.Schedules(ctx, c.workflow.Name())
}

// DeleteSchedule deletes a schedule created at run time
// (ErrScheduleNotFound when there is none); the runs it started are left
// as they are.
func (c *Client[In, Result]) DeleteSchedule(ctx context.Context, name string) error {
	return c.workflow.engine.DeleteSchedule(ctx, c.workflow.Name(), name)
}

// PauseSchedule pauses a schedule created at run time: it starts no run
// until resumed.
func (c *Client[In, Result]) PauseSchedule(ctx context.Context, name string) (Schedule, error) {
	return c.workflow.engine.PauseSchedule(ctx, c.workflow.Name(), name)
}

// ResumeSchedule resumes a paused schedule; the ticks that came while it
// was paused are not fired.
func (c *Client[In, Result]) ResumeSchedule(ctx context.Context, name string) (Schedule, error) {
	return c.workflow.engine.ResumeSchedule(ctx, c.workflow.Name(), name)
}

// Pause pauses the workflow for the tenants given, or for every tenant
// when none is: no task of its runs is claimed until Resume (see
// Engine.PauseWorkflow).
func (c *Client[In, Result]) Pause(ctx context.Context, tenants ...string) ([]WorkflowPause, error) {
	return c.workflow.engine.PauseWorkflow(ctx, c.workflow.Name(), tenants...)
}

// Resume lifts the workflow's pauses for the tenants given, or every
// pause of it when none is (see Engine.ResumeWorkflow).
func (c *Client[In, Result]) Resume(ctx context.Context, tenants ...string) ([]WorkflowPause, error) {
	return c.workflow.engine.ResumeWorkflow(ctx, c.workflow.Name(), tenants...)
}

// encodeInput encodes a run input; the error names the workflow.
func (c *Client[In, Result]) encodeInput(in In) (json.RawMessage, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding %s input: %w", c.workflow.Name(), err)
	}
	return raw, nil
}

// result decodes what Workflow.Run, Wait or Result returned. It returns
// runErr as is (a *RunFailedError stays one) unless an output does not
// decode, which is joined to it.
func (c *Client[In, Result]) result(res *RunResult, runErr error) (Result, error) {
	if res == nil {
		var zero Result
		return zero, runErr
	}
	out, err := c.decode(res)
	if err != nil {
		return out, errors.Join(runErr, err)
	}
	return out, runErr
}

// SignalEvent encodes payload and sends it as the event named event to
// run id of w; see Workflow.Signal. Generated clients call it in their
// Signal<Event> methods, which take the event's payload type. An id that
// names no run of w is refused with ErrRunNotFound, a payload the
// event's schema refuses with an *EventError.
func SignalEvent(ctx context.Context, w *Workflow, id RunID, event string, payload any, opts ...RunOption) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encoding event %s: %w", event, err)
	}
	_, err = w.Signal(ctx, id, event, raw, opts...)
	return err
}

// SendEvent encodes payload and sends it as the event named event with
// key, to the runs of w waiting for it with that key, and returns how
// many waiting steps it woke; see Workflow.Send. Generated clients call
// it in their Send<Event> methods, which take the event's payload type.
func SendEvent(ctx context.Context, w *Workflow, event, key string, payload any, opts ...RunOption) (int, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return 0, fmt.Errorf("encoding event %s: %w", event, err)
	}
	return w.Send(ctx, event, key, raw, opts...)
}
