package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/internal/executor"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/condition"
)

// Event waits. A wait step runs no code: its task asks the store to wait
// for its event (store.Await), keyed when the step declares a key, and
// waits WAITING, holding nothing, until the store wakes it with the
// event's payload as its output, or with none when its timeout passed.
// Woken, it completes with the payload, or is skipped or fails as its
// onTimeout says.

// compileEvents compiles the payload schemas of the workflow's events and
// the keys of its wait steps (whose output schemas are their events',
// spec.Workflow.FillWaitOutputs).
func (d *Definition) compileEvents(env func() (*condition.InputEnv, error)) error {
	if len(d.spec.Events) == 0 {
		return nil
	}
	d.events = make(map[string]*schema, len(d.spec.Events))
	for _, ev := range d.spec.Events {
		sch, err := compileSchema(d.spec.Name+".events."+ev.Name, ev.Schema)
		if err != nil {
			return fmt.Errorf("compiling workflow %s: event %s: %w", d.spec.Name, ev.Name, err)
		}
		d.events[ev.Name] = sch
	}
	for i := range d.spec.Steps {
		s := &d.spec.Steps[i]
		if !s.IsWait() {
			continue
		}
		if s.WaitFor.Key == "" {
			continue
		}
		in, err := env()
		if err != nil {
			return err
		}
		x, issues := in.CompileKey(s.WaitFor.Key)
		if len(issues) > 0 {
			return fmt.Errorf("compiling workflow %s: step %s: waitFor key %q: %s", d.spec.Name, s.Name, s.WaitFor.Key, issues[0].Message)
		}
		if d.waitKeys == nil {
			d.waitKeys = make([]*condition.KeyExpr, len(d.spec.Steps))
		}
		d.waitKeys[i] = x
	}
	return nil
}

// waitKey is the compiled key of wait step i, or nil when it has none.
func (d *Definition) waitKey(i int) *condition.KeyExpr {
	if d.waitKeys == nil {
		return nil
	}
	return d.waitKeys[i]
}

// await is the result of a claimed wait task: it waits for its event,
// keyed when its step declares a key, until its timeout.
func (p *planner) await(ctx context.Context, c store.ClaimedTask, def *Definition, step *dag.Step, now time.Time) (store.Await, error) {
	w := def.spec.Steps[step.Index].WaitFor
	a := store.Await{Attempt: executor.AttemptOf(c), Event: w.Event}
	if x := def.waitKey(step.Index); x != nil {
		key, err := x.Eval(ctx, c.Input)
		if err != nil {
			return a, fmt.Errorf("waitFor key of step %s: %w", step.Name, err)
		}
		a.Keyed, a.EventKey = true, storedKey(key)
	}
	if w.Timeout > 0 {
		a.Deadline = now.Add(w.Timeout)
	}
	return a, nil
}

// collectWait ends a woken wait task: with its event's payload, which
// the store keeps as the task's output, or, when none came before the
// timeout, skipped or failed as the step says.
func (p *planner) collectWait(ctx context.Context, c store.ClaimedTask, def *Definition, step *dag.Step) (store.Results, error) {
	a := executor.AttemptOf(c)
	tasks, err := p.store.ListTasks(ctx, c.Key.Run)
	if err != nil {
		return store.Results{}, err
	}
	var payload []byte
	for _, t := range tasks {
		if t.Key.Step == c.Key.Step {
			payload = t.Output
		}
	}
	if len(payload) > 0 {
		return store.Results{Completions: []store.Completion{{Attempt: a, Woken: true, Output: payload, Children: step.Children}}}, nil
	}
	w := def.spec.Steps[step.Index].WaitFor
	msg := fmt.Sprintf("no %s event came within %v", w.Event, w.Timeout)
	if w.SkipsOnTimeout() {
		return store.Results{Completions: []store.Completion{{Attempt: a, Skipped: true, Detail: msg, Children: step.Children}}}, nil
	}
	return store.Results{Failures: []store.Failure{{Attempt: a, Error: msg, TimedOut: true}}}, nil
}

// Signal sends the event named event to run id, a run of w: its steps
// waiting for that event receive payload, now or when they begin to
// wait (see docs/reference/workflow/waitFor.md). It returns how many waiting steps it
// woke. The payload must satisfy the event's schema (an *EventError says
// where it does not). An id that names no run of w is refused with
// ErrRunNotFound. WithTx sends it inside the caller's transaction (on
// Postgres); no other option applies.
func (w *Workflow) Signal(ctx context.Context, id RunID, event string, payload json.RawMessage, opts ...RunOption) (int, error) {
	return w.engine.sendEvents(ctx, w.def, []store.NewEvent{{Workflow: w.Name(), Name: event, Run: id, Payload: payload}}, opts)
}

// Send sends the event named event with key: the steps waiting for that
// event with that key (their waitFor key), in runs of w and the tenant
// (WithTenant; the default tenant otherwise) created at or before now,
// receive payload, now or when they begin to wait. It returns how many
// waiting steps it woke; those that begin to wait later receive it then.
// A key may be of any length: the store keeps a long one as its digest,
// as it does the waits' keys (see storedKey).
// The payload must satisfy the event's schema (an *EventError says where
// it does not). WithTx sends it inside the caller's transaction (on
// Postgres).
func (w *Workflow) Send(ctx context.Context, event, key string, payload json.RawMessage, opts ...RunOption) (int, error) {
	o := runOptions(opts)
	return w.engine.sendEvents(ctx, w.def, []store.NewEvent{{Workflow: w.Name(), Name: event, Tenant: o.Tenant, Key: storedKey(key), Payload: payload}}, opts)
}

// EventByName is an event named by its workflow's name, sent from outside
// the application (Engine.SendEvent): to one run (Run), or by key (Key,
// for the waits with that key in runs of Tenant).
type EventByName struct {
	Workflow string
	Event    string
	Run      RunID
	Key      string
	// Tenant is the tenant of the runs a keyed event reaches; empty means
	// the default tenant.
	Tenant  string
	Payload json.RawMessage
}

// Sent reports what Engine.SendEvent did. Its JSON is what trellis events
// send -format json prints.
type Sent struct {
	Workflow string `json:"workflow"`
	// Version is the stored version whose event schema the payload was
	// checked against: the workflow's newest.
	Version string `json:"version"`
	Event   string `json:"event"`
	Run     RunID  `json:"run,omitempty"`
	Key     string `json:"key,omitempty"`
	// Woken is how many waiting steps the event woke; those that begin
	// to wait later receive it then.
	Woken int `json:"woken"`
}

// SendEvent sends an event of a workflow this process may not have the
// code of, named by its workflow: as Workflow.Signal does (with Run) or
// Workflow.Send (with Key), checking the payload against the event's
// schema in the workflow's newest stored version. It is what trellis
// events send does, for an operator who must unblock a run. Exactly one
// of Run and Key is given.
func (e *Engine) SendEvent(ctx context.Context, ev EventByName) (Sent, error) {
	if (ev.Run == uuid.Nil) == (ev.Key == "") {
		return Sent{}, errors.New("give either a run to send the event to, or a key to send it with")
	}
	versions, err := e.store.ListWorkflows(ctx)
	if err != nil {
		return Sent{}, err
	}
	versions = slices.DeleteFunc(versions, func(v store.WorkflowVersion) bool { return v.Name != ev.Workflow })
	if len(versions) == 0 {
		return Sent{}, fmt.Errorf("no version of workflow %q is stored (a workflow is stored when its first run is triggered)", ev.Workflow)
	}
	var spec WorkflowSpec
	if err := json.Unmarshal(versions[0].Spec, &spec); err != nil { // the newest
		return Sent{}, fmt.Errorf("decoding workflow version %s: %w", versions[0].Version, err)
	}
	if _, ok := spec.Event(ev.Event); !ok {
		var names []string
		for _, d := range spec.Events {
			names = append(names, d.Name)
		}
		if len(names) == 0 {
			return Sent{}, fmt.Errorf("workflow %s (%s) declares no events", ev.Workflow, versions[0].Version)
		}
		return Sent{}, fmt.Errorf("workflow %s (%s) declares no event %q; it declares %v", ev.Workflow, versions[0].Version, ev.Event, names)
	}
	w, err := e.Workflow(&spec)
	if err != nil {
		return Sent{}, err
	}
	out := Sent{Workflow: ev.Workflow, Version: versions[0].Version, Event: ev.Event, Run: ev.Run, Key: ev.Key}
	if ev.Run != uuid.Nil {
		out.Woken, err = w.Signal(ctx, ev.Run, ev.Event, ev.Payload)
		return out, err
	}
	var opts []RunOption
	if ev.Tenant != "" {
		opts = append(opts, WithTenant(ev.Tenant))
	}
	out.Woken, err = w.Send(ctx, ev.Event, ev.Key, ev.Payload, opts...)
	return out, err
}

// sendEvents validates events of def and sends them; it returns how many
// waits they woke.
func (e *Engine) sendEvents(ctx context.Context, def *Definition, events []store.NewEvent, opts []RunOption) (int, error) {
	o := runOptions(opts)
	if o.IdempotencyKey != "" || o.IdempotencyKeys != nil || o.Priority != 0 || o.EventKey != "" {
		return 0, fmt.Errorf("sending events of %s: only WithTenant and WithTx apply to events", def.Name())
	}
	if err := e.cfg.SizeLimits.checkTenant(o.Tenant); err != nil {
		return 0, fmt.Errorf("sending events of %s: %w", def.Name(), err)
	}
	for i, ev := range events {
		if len(ev.Payload) == 0 {
			events[i].Payload = json.RawMessage(`{}`)
		}
		if err := e.cfg.SizeLimits.checkEvent(ev.Name, events[i].Payload); err != nil {
			return 0, fmt.Errorf("sending event %s of %s: %w", clip(ev.Name), def.Name(), err)
		}
		if err := def.checkEvent(ev.Name, events[i].Payload); err != nil {
			return 0, err
		}
	}
	res, err := e.deliver(ctx, events, o.Tx)
	if err != nil {
		if len(events) == 1 && events[0].Run != uuid.Nil {
			return 0, fmt.Errorf("sending event %s: %w", events[0].Name, storeErr(err, events[0].Run))
		}
		return 0, fmt.Errorf("sending events of %s: %w", def.Name(), err)
	}
	woken := 0
	for _, r := range res {
		woken += r.Woken
	}
	return woken, nil
}

// checkEvent checks a payload of the event named event of d against its
// schema: an *EventError says where it does not satisfy it.
func (d *Definition) checkEvent(event string, payload json.RawMessage) error {
	sch, ok := d.events[event]
	if !ok {
		return fmt.Errorf("sending event %q: workflow %s declares no such event", clip(event), d.Name())
	}
	problems, err := sch.problems("payload", payload)
	if err != nil {
		return fmt.Errorf("validating event %s of %s: %w", clip(event), d.Name(), err)
	}
	if len(problems) > 0 {
		return &EventError{Workflow: d.Name(), Event: event, Problems: problems}
	}
	return nil
}

// deliver sends validated events, in tx when not nil, and nudges the
// claim loop when they woke waits. Signal, Send and a publish with a key
// deliver through it.
func (e *Engine) deliver(ctx context.Context, events []store.NewEvent, tx store.Tx) ([]store.SentEvent, error) {
	send := func() (res []store.SentEvent, err error) {
		return e.store.SendEvents(ctx, store.SendEvents{Events: events, Now: e.clock.Now(), Tx: tx})
	}
	var res []store.SentEvent
	var err error
	if tx != nil {
		res, err = send()
	} else {
		// A retried send may deliver twice; a wait takes the first event,
		// so a repeat changes nothing (and one with an id is dropped).
		err = retryTransient(ctx, e.clock, func() (err error) { res, err = send(); return err })
	}
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if r.Woken > 0 {
			e.wake()
			break
		}
	}
	return res, nil
}
