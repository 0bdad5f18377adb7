package runtime

import (
	"cmp"
	"context"
	"encoding/json"

	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/condition"
)

// Events that start runs. A workflow's startOn names events (declared
// under its events, with their payload schemas) that start it: publishing
// one (Engine.PublishEvent) starts a run of every workflow that starts on
// it, whose filter matches, with an input built from the payload, and,
// published with a key, delivers it to the steps waiting for it by key
// (through the machinery of Send, waits.go). The listeners are the
// workflows this engine registered and the newest stored version of every
// other workflow, so a process that publishes need not have their code.
// All the runs one publish starts are created in one store call, all or
// none, and the event delivered in a second.

// startOn is a compiled startOn entry.
type startOn struct {
	event string
	env   *condition.Env
	// filter is the entry's if, or nil; fields build the input field by
	// field, or whole builds it all; neither means the payload is the
	// input.
	filter *condition.Program
	fields map[string]*condition.ValueExpr
	whole  *condition.ValueExpr
}

// compileStartOn compiles the workflow's startOn entries against their
// events' payload schemas.
func (d *Definition) compileStartOn() error {
	for i, st := range d.spec.StartOn {
		what := fmt.Sprintf("compiling workflow %s: startOn[%d]", d.spec.Name, i)
		ev, ok := d.spec.Event(st.Event)
		if !ok {
			return fmt.Errorf("%s: event %q is not declared under events", what, st.Event)
		}
		env, err := condition.NewPayloadEnv(json.RawMessage(ev.Schema))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		c := startOn{event: st.Event, env: env}
		if st.If != "" {
			prg, issues := env.Compile(st.If)
			if len(issues) > 0 {
				return fmt.Errorf("%s: if %q: %s", what, st.If, issues[0].Message)
			}
			c.filter = prg
		}
		if st.InputExpr != "" {
			x, issues := env.CompileValue(st.InputExpr)
			if len(issues) > 0 {
				return fmt.Errorf("%s: input %q: %s", what, st.InputExpr, issues[0].Message)
			}
			c.whole = x
		}
		for name, src := range st.Input {
			x, issues := env.CompileValue(src)
			if len(issues) > 0 {
				return fmt.Errorf("%s: input field %s %q: %s", what, name, src, issues[0].Message)
			}
			if c.fields == nil {
				c.fields = map[string]*condition.ValueExpr{}
			}
			c.fields[name] = x
		}
		d.startOn = append(d.startOn, c)
	}
	return nil
}

// StartsOn reports whether an event named event starts runs of the
// workflow.
func (d *Definition) StartsOn(event string) bool {
	return slices.ContainsFunc(d.startOn, func(s startOn) bool { return s.event == event })
}

// startInput is the input of the run an event of d starts: built by the
// first startOn entry for the event whose filter holds (ok false when
// none does).
func (d *Definition) startInput(ctx context.Context, event string, payload json.RawMessage) (json.RawMessage, bool, error) {
	for _, st := range d.startOn {
		if st.event != event {
			continue
		}
		vars, err := st.env.BindPayload(payload)
		if err != nil {
			return nil, false, err
		}
		if st.filter != nil {
			ok, err := st.filter.Eval(ctx, vars)
			if err != nil {
				return nil, false, fmt.Errorf("startOn filter: %w", err)
			}
			if !ok {
				continue
			}
		}
		switch {
		case st.whole != nil:
			in, err := st.whole.Eval(ctx, vars)
			if err != nil {
				return nil, false, fmt.Errorf("startOn input: %w", err)
			}
			return in, true, nil
		case st.fields != nil:
			in := make(map[string]json.RawMessage, len(st.fields))
			for name, x := range st.fields {
				v, err := x.Eval(ctx, vars)
				if err != nil {
					return nil, false, fmt.Errorf("startOn input field %s: %w", name, err)
				}
				in[name] = v
			}
			raw, err := json.Marshal(in)
			return raw, err == nil, err
		}
		return payload, true, nil
	}
	return nil, false, nil
}

// Published reports what a publish did, listener by listener. Its JSON
// is what trellis events send -format json prints for a published event.
type Published struct {
	Event string `json:"event"`
	// ID is the event's id, which makes publishing idempotent; empty
	// when none was given.
	ID string `json:"id,omitempty"`
	// Key is the key the event was delivered with to the steps waiting
	// for it by key (WithEventKey); empty when none was given.
	Key    string `json:"key,omitempty"`
	Tenant string `json:"tenant"`
	// Listeners are the workflows the event reaches, by name: those that
	// start on it and, with a key, those with steps that wait for it by
	// key.
	Listeners []Listener `json:"listeners"`
}

// Listener is a workflow a published event reaches, and what the event
// did to it. To a workflow that starts on it: started a run (Run), found
// the run an earlier publish of the same event id started (Run, with
// Existing), matched no filter (Filtered), or was refused (Refused says
// why). To a workflow with steps that wait for it by key, when the
// publish has a key: Delivered.
type Listener struct {
	Workflow string `json:"workflow"`
	// Version is the version of the workflow the event was checked
	// against and the run started with.
	Version  string `json:"version"`
	Run      RunID  `json:"run,omitzero"`
	Existing bool   `json:"existing,omitempty"`
	Filtered bool   `json:"filtered,omitempty"`
	Refused  string `json:"refused,omitempty"`
	// Delivered is what the event did to the workflow's waits, when it
	// was delivered to them; nil when it was not (no key, no step of the
	// workflow waits for it by key, or the workflow refused the payload).
	Delivered *Delivered `json:"delivered,omitempty"`
}

// Delivered is what a published event with a key did to the steps of one
// workflow that wait for it by key, as Send<Event> with that key does:
// woke Woken waiting steps (those that begin to wait later receive it
// then); or nothing, when an earlier publish of the same event id
// delivered it (Repeat).
type Delivered struct {
	Woken  int  `json:"woken"`
	Repeat bool `json:"repeat,omitempty"`
}

// Started returns the runs the publish started, or found started by an
// earlier publish of the same event id, in workflow name order.
func (p Published) Started() []RunID {
	var out []RunID
	for _, l := range p.Listeners {
		if l.Run != (RunID{}) {
			out = append(out, l.Run)
		}
	}
	return out
}

// Woken returns how many waiting steps the publish woke, in every
// workflow.
func (p Published) Woken() int {
	n := 0
	for _, l := range p.Listeners {
		if l.Delivered != nil {
			n += l.Delivered.Woken
		}
	}
	return n
}

// PublishError is returned by a publish that some listeners refused: the
// payload fails the schema of their event, or their filter or input
// could not be evaluated, or the input built fails their input schema.
// The other listeners' runs were started, and the event delivered to
// their waits; Published says which.
type PublishError struct {
	Event   string
	Refused []Listener
}

func (e *PublishError) Error() string {
	parts := make([]string, len(e.Refused))
	for i, l := range e.Refused {
		parts[i] = l.Workflow + ": " + l.Refused
	}
	return fmt.Sprintf("publishing event %s: refused by %s", e.Event, strings.Join(parts, "; "))
}

// PublishEvent publishes the event named event: it starts a run of every
// workflow that starts on it (its startOn) and whose filter matches the
// payload, with the input its startOn builds from the payload. The
// listeners are the workflows this engine registered and, for other
// workflows, their newest stored version: a process may publish events
// of workflows whose code it does not have.
//
// With a key (WithEventKey), it also delivers the event with that key to
// the steps that wait for it by key, in every listener with such steps
// (whether or not it starts on the event): what Send<Event> with the key
// does for one workflow, with the same rules (the first event a wait
// receives wins; a step that begins to wait later, in a run created
// before the event, receives it then). A run the publish starts is
// created before the event is delivered, so its own keyed waits for the
// event receive it too. Without a key, publishing wakes no waiting step.
//
// With an id, publishing is idempotent: a second publish of the same
// event id (for the same tenant) starts nothing new, and reports the runs
// the first one started (Listener.Existing): each run's idempotency key
// is trellis:event:<event>:<id>, unique per workflow and tenant. It
// delivers nothing either (Delivered.Repeat), as long as the store keeps
// the event delivered first (the events retention, seven days by
// default). Without one, every publish starts runs and delivers.
//
// Each listener checks the payload against its own schema of the event;
// the runs of the listeners that accept it are created together, in one
// store call, and the event is delivered to their waits in a second one;
// those that refuse it are reported in Published and in a *PublishError.
// Options: WithTenant, the tenant of the runs started and of the waits
// reached; WithTags and WithTag, the runs' tags (see Tags); WithEventKey;
// WithTx, to do both in the caller's transaction on Postgres: the runs
// exist and the event is delivered if and only if it commits. Without
// WithTx, a publish that fails between its two store calls has started
// its runs without delivering the event: publishing it again with the
// same id delivers it, once.
func (e *Engine) PublishEvent(ctx context.Context, event, id string, payload json.RawMessage, opts ...RunOption) (out Published, err error) {
	o := runOptions(opts)
	if o.IdempotencyKey != "" || o.IdempotencyKeys != nil || o.Priority != 0 {
		return Published{}, fmt.Errorf("publishing event %s: only WithTenant, WithTags, WithEventKey and WithTx apply to a publish", clip(event))
	}
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	if err := e.cfg.SizeLimits.checkEvent(clip(event), payload); err != nil {
		return Published{}, fmt.Errorf("publishing event %s: %w", clip(event), err)
	}
	var keys []string
	if id != "" {
		keys = []string{"trellis:event:" + event + ":" + id}
		// The runs' idempotency key holds the id: checked once here, for
		// every listener.
		if err := e.cfg.SizeLimits.checkIdempotencyKey("event id (in the idempotency key trellis:event:<event>:<id>)", keys[0]); err != nil {
			return Published{}, fmt.Errorf("publishing event %s: %w", clip(event), err)
		}
	}
	if err := e.cfg.SizeLimits.checkTenant(o.Tenant); err != nil {
		return Published{}, fmt.Errorf("publishing event %s: %w", clip(event), err)
	}
	keyed := o.EventKey != ""
	defs, err := e.listeners(ctx, event, keyed)
	if err != nil {
		return Published{}, fmt.Errorf("publishing event %s: %w", clip(event), err)
	}
	out = Published{Event: event, ID: id, Key: o.EventKey, Tenant: o.Tenant, Listeners: make([]Listener, len(defs))}
	var runs []store.NewRun
	var of []int // of[i] is the listener of runs[i]
	var events []store.NewEvent
	var to []int // to[i] is the listener of events[i]
	var refused []Listener
	// Each listener's run has a trigger span, as a trigger's does; they
	// end when the runs are created, or not.
	spans, refusals := make([]trace.Span, len(defs)), make([]error, len(defs))
	defer func() {
		for i, span := range spans {
			if span == nil {
				continue
			}
			var refs []RunRef
			failed := cmp.Or(refusals[i], err)
			if i < len(out.Listeners) && out.Listeners[i].Run != (RunID{}) {
				l := out.Listeners[i]
				refs = []RunRef{{ID: l.Run, Workflow: l.Workflow, Existing: l.Existing}}
				failed = nil // created, whatever the delivery did
			}
			e.endTrigger(span, refs, failed)
		}
	}()
	for i, def := range defs {
		l := &out.Listeners[i]
		l.Workflow, l.Version = def.Name(), def.Version()
		// Stored even when it starts nothing, for the processes that
		// publish without its code (see listeners).
		if err := e.saveDefinition(ctx, def); err != nil {
			return Published{}, fmt.Errorf("publishing event %s: %w", clip(event), err)
		}
		if keyed && def.waitsByKey(event) {
			switch err := def.checkEvent(event, payload); {
			case err == nil:
				events = append(events, store.NewEvent{Workflow: def.Name(), Name: event, Tenant: o.Tenant, Key: storedKey(o.EventKey), ID: id, Payload: payload})
				to = append(to, i)
			case !def.StartsOn(event):
				l.Refused = err.Error()
				refused = append(refused, *l)
				continue
			} // else startRun refuses it, by the same check
		}
		if !def.StartsOn(event) {
			continue
		}
		spanCtx, span, traceContext := e.startTrigger(ctx, def.Name(), o.Tenant, 1, o.Tags)
		spans[i] = span
		run, ok, err := e.startRun(spanCtx, def, event, payload, keys, o, traceContext)
		switch {
		case err != nil:
			refusals[i] = err
			l.Refused = err.Error()
			refused = append(refused, *l)
			continue
		case !ok:
			l.Filtered = true
			continue
		}
		runs = append(runs, run)
		of = append(of, i)
	}
	if len(runs) > 0 {
		res, err := e.storeRuns(ctx, runs, o)
		if err != nil {
			return Published{}, fmt.Errorf("publishing event %s: %w", clip(event), err)
		}
		for j, r := range res {
			l := &out.Listeners[of[j]]
			l.Run, l.Existing = r.ID, !r.Created
		}
		e.started(ctx, runs, res, o.Tenant)
	}
	if len(events) > 0 {
		res, err := e.deliver(ctx, events, o.Tx)
		if err != nil {
			err = fmt.Errorf("publishing event %s: delivering it to the waits: %w", clip(event), err)
			if len(runs) > 0 && o.Tx == nil {
				err = fmt.Errorf("%w (its runs were started: publish it again with the same id to deliver it once)", err)
			}
			return out, err
		}
		for j, r := range res {
			out.Listeners[to[j]].Delivered = &Delivered{Woken: r.Woken, Repeat: r.Repeat}
		}
	}
	if len(refused) > 0 {
		return out, &PublishError{Event: event, Refused: refused}
	}
	return out, nil
}

// startRun makes the run an event starts of def, or reports (ok false)
// that no startOn filter of def holds for it. An error says why def
// refuses the event.
func (e *Engine) startRun(ctx context.Context, def *Definition, event string, payload json.RawMessage, keys []string, o RunOptions, traceContext string) (store.NewRun, bool, error) {
	if err := def.checkEvent(event, payload); err != nil {
		return store.NewRun{}, false, err
	}
	input, ok, err := def.startInput(ctx, event, payload)
	if err != nil || !ok {
		return store.NewRun{}, false, err
	}
	runs, err := e.newRuns(ctx, def, []json.RawMessage{input}, keys, o, traceContext)
	if err != nil {
		return store.NewRun{}, false, err
	}
	return runs[0], true, nil
}

// listeners returns the definitions of the workflows that start on
// event, and when keyed of those with steps that wait for it by key, by
// name: the registered definition of each workflow this engine
// registered, and the newest stored version of every other workflow.
func (e *Engine) listeners(ctx context.Context, event string, keyed bool) ([]*Definition, error) {
	versions, err := e.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Definition{}
	for _, r := range e.registry.registrations() {
		byName[r.def.Name()] = r.def
	}
	seen := map[string]bool{}
	for _, v := range versions { // by name, newest first
		if seen[v.Name] {
			continue
		}
		seen[v.Name] = true
		if _, ok := byName[v.Name]; ok {
			continue
		}
		events, err := e.storedEvents(v)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(events.starts, event) && (!keyed || !slices.Contains(events.keyedWaits, event)) {
			continue
		}
		def, err := e.definition(ctx, v.Version)
		if err != nil {
			return nil, err
		}
		byName[v.Name] = def
	}
	var out []*Definition
	for _, def := range byName {
		if def.StartsOn(event) || keyed && def.waitsByKey(event) {
			out = append(out, def)
		}
	}
	slices.SortFunc(out, func(a, b *Definition) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// waitsByKey reports whether a step of the workflow waits for the event
// named event with a key: whether a keyed publish of it reaches its
// waits.
func (d *Definition) waitsByKey(event string) bool {
	return slices.ContainsFunc(d.spec.Steps, func(s StepSpec) bool {
		return s.IsWait() && s.WaitFor.Event == event && s.WaitFor.Key != ""
	})
}

// versionEvents are the events that start a stored version, and those
// its steps wait for by key.
type versionEvents struct{ starts, keyedWaits []string }

// storedEvents returns the events that start a stored version, and
// those its steps wait for by key, decoding its spec once per process.
func (e *Engine) storedEvents(v store.WorkflowVersion) (versionEvents, error) {
	if events, ok := e.registry.versionEvents(v.Version); ok {
		return events, nil
	}
	var spec struct {
		StartOn []struct {
			Event string `json:"event"`
		} `json:"startOn"`
		Steps []struct {
			WaitFor *struct {
				Event string `json:"event"`
				Key   string `json:"key"`
			} `json:"waitFor"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(v.Spec, &spec); err != nil {
		return versionEvents{}, fmt.Errorf("decoding workflow version %s: %w", v.Version, err)
	}
	var events versionEvents
	for _, s := range spec.StartOn {
		events.starts = append(events.starts, s.Event)
	}
	for _, s := range spec.Steps {
		if s.WaitFor != nil && s.WaitFor.Key != "" {
			events.keyedWaits = append(events.keyedWaits, s.WaitFor.Event)
		}
	}
	e.registry.setVersionEvents(v.Version, events)
	return events, nil
}

// Publish publishes the event named event of w through w's engine: see
// Engine.PublishEvent. w must declare the event; its payload is checked
// against each listener's schema.
func (w *Workflow) Publish(ctx context.Context, event, id string, payload json.RawMessage, opts ...RunOption) (Published, error) {
	if _, ok := w.def.events[event]; !ok {
		return Published{}, fmt.Errorf("publishing event %q: workflow %s declares no such event", clip(event), w.Name())
	}
	return w.engine.PublishEvent(ctx, event, id, payload, opts...)
}

// PublishEvent encodes payload and publishes it as the event named event
// with id (empty for none), starting every workflow that starts on it;
// see Engine.PublishEvent. Generated clients call it in their
// Publish<Event> methods, which take the event's payload type.
func PublishEvent(ctx context.Context, w *Workflow, event, id string, payload any, opts ...RunOption) (Published, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return Published{}, fmt.Errorf("encoding event %s: %w", event, err)
	}
	return w.Publish(ctx, event, id, raw, opts...)
}
