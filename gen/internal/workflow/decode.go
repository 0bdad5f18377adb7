package workflow

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/schema/spec"
)

// decoder turns the Value tree into a Workflow, reporting every value that
// has the wrong shape. Each check uses the position and rule the format
// schema uses for the same finding (see Problem).
type decoder struct {
	probs    *Problems
	src      []byte
	defaults retryOverride
	timeout  time.Duration     // defaults.timeout
	runsOn   map[string]string // defaults.runsOn
}

func (d *decoder) lines() [][]byte { return bytes.Split(d.src, []byte("\n")) }

func (d *decoder) workflow(root *Value) *Workflow {
	w := &Workflow{}
	d.keys(root, "the workflow", "name", "description", "input", "priority", "concurrency", "runConcurrency", "debounce", "rateLimit", "timeout", "defaults", "steps", "onFailure", "schedules", "events", "startOn")
	if f := d.required(root, "name", "missing name: give the workflow a name such as order-processing"); f != nil {
		w.Name, w.NamePos = d.name(f.Value, "workflow name"), f.Value.Pos
	}
	if f := root.Get("description"); f != nil {
		w.Description = strings.TrimRight(d.str(f.Value, "description"), "\n")
	}
	if f := d.required(root, "input", "missing input: declare the JSON Schema of the run input, such as input: {type: object, properties: {...}}"); f != nil {
		w.Input = d.schema(f.Value, "input")
	}
	if f := root.Get("priority"); f != nil {
		w.Priority = d.priority(f.Value)
	}
	if f := root.Get("concurrency"); f != nil {
		w.Concurrency = d.concurrency(f.Value, "concurrency")
	}
	if f := root.Get("runConcurrency"); f != nil {
		w.RunConcurrency = d.runConcurrency(f.Value)
	}
	if f := root.Get("debounce"); f != nil {
		w.Debounce = d.debounce(f.Value)
	}
	if f := root.Get("rateLimit"); f != nil {
		w.RateLimit = d.rateLimit(f.Value, "rateLimit")
	}
	if f := root.Get("timeout"); f != nil {
		w.Timeout = d.duration(f.Value, "timeout")
	}
	if f := root.Get("defaults"); f != nil {
		d.decodeDefaults(f.Value)
	}
	if f := root.Get("events"); f != nil {
		w.Events = d.events(f.Value)
	}
	if f := d.required(root, "steps", "missing steps: declare at least one step"); f != nil {
		w.Steps = d.steps(f.Value)
	}
	for _, s := range w.Steps {
		if s.IsWait() {
			if ev, ok := w.Event(s.WaitFor.Event); ok {
				s.Output = ev.Schema // a wait step completes with its event's payload
			}
		}
	}
	if f := root.Get("onFailure"); f != nil {
		w.OnFailure = d.onFailure(f.Value)
	}
	if f := root.Get("schedules"); f != nil {
		w.Schedules = d.schedules(f.Value)
	}
	if f := root.Get("startOn"); f != nil {
		w.StartOn = d.startOn(f.Value)
	}
	return w
}

// schedules reads the cron schedules: a list of {name, cron, timezone,
// input, tenant}. checkSchedules checks the expressions, zones and inputs.
func (d *decoder) schedules(v *Value) []*Schedule {
	if v.Kind != KindList {
		d.probs.Add(v.Pos, "type", "schedules must be a list of schedules (each item starting with '- name: ...'), not %s", v.Kind)
		return nil
	}
	var out []*Schedule
	for i, item := range v.Items {
		what := fmt.Sprintf("schedules[%d]", i)
		if !d.isMap(item, what, `a mapping such as {name: nightly, cron: "0 3 * * *"}`) {
			continue
		}
		d.keys(item, what, "name", "cron", "timezone", "input", "tenant")
		sc := &Schedule{Pos: item.Pos}
		if f := d.required(item, "name", what+" has no name: add name: <schedule-name>"); f != nil {
			sc.Name, sc.Pos = d.name(f.Value, "schedule name"), f.Value.Pos
		}
		if f := d.required(item, "cron", what+` has no cron: add cron: "<minute hour day month weekday>", such as "0 3 * * *"`); f != nil {
			sc.Cron, sc.CronPos = d.str(f.Value, "cron of "+what), f.Value.Pos
		}
		if f := item.Get("timezone"); f != nil {
			sc.Timezone, sc.TZPos = d.str(f.Value, "timezone of "+what), f.Value.Pos
		}
		if f := item.Get("input"); f != nil {
			if d.isMap(f.Value, "input of "+what, "a mapping holding the run input") {
				sc.Input = f.Value
			}
		}
		if f := item.Get("tenant"); f != nil {
			sc.Tenant = d.str(f.Value, "tenant of "+what)
		}
		out = append(out, sc)
	}
	return out
}

func (d *decoder) decodeDefaults(v *Value) {
	if !d.isMap(v, "defaults", "a mapping with retry, timeout and runsOn") {
		return
	}
	d.keys(v, "defaults", "retry", "timeout", "runsOn")
	if f := v.Get("runsOn"); f != nil {
		d.runsOn = d.labels(f.Value, "defaults.runsOn")
	}
	if f := v.Get("retry"); f != nil {
		d.defaults = d.retry(f.Value, "defaults.retry", "")
	}
	if f := v.Get("timeout"); f != nil {
		d.timeout = d.duration(f.Value, "defaults.timeout")
	}
}

func (d *decoder) steps(v *Value) []*Step {
	if v.Kind != KindList {
		d.probs.Add(v.Pos, "type", "steps must be a list of steps (each item starting with '- name: ...'), not %s", v.Kind)
		return nil
	}
	if len(v.Items) == 0 {
		d.probs.Add(v.Pos, "minItems", "steps is empty: declare at least one step")
		return nil
	}
	out := make([]*Step, 0, len(v.Items))
	for i, item := range v.Items {
		if s := d.step(item, i); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) step(v *Value, index int) *Step {
	if !d.isMap(v, fmt.Sprintf("steps[%d]", index), "a mapping such as {name: charge, parents: [validate]}") {
		return nil
	}
	s := &Step{Pos: v.Pos}
	what := fmt.Sprintf("steps[%d]", index)
	if f := d.required(v, "name", fmt.Sprintf("%s has no name: add name: <step-name>", what)); f != nil {
		if s.Name = d.name(f.Value, "step name"); s.Name != "" {
			what = fmt.Sprintf("step %q", s.Name)
		}
		s.Pos = f.Value.Pos
	}
	s.label = what
	d.keys(v, what, "name", "parents", "skipIf", "sleep", "retry", "timeout", "output", "concurrency", "rateLimit", "forEach", "workflow", "waitFor", "runsOn")
	if f := v.Get("parents"); f != nil {
		s.Parents = d.parents(f.Value, what)
	}
	if f := v.Get("skipIf"); f != nil {
		s.SkipIf = d.skipIf(f.Value, what)
	}
	if f := v.Get("sleep"); f != nil {
		s.Sleep = d.duration(f.Value, "sleep of "+what)
		for _, key := range []string{"retry", "timeout", "output", "concurrency", "rateLimit", "forEach", "workflow", "waitFor", "runsOn"} {
			if code := v.Get(key); code != nil {
				d.probs.Add(code.KeyPos, "false", "sleep step %s cannot have %s: a sleep step runs no code and takes only name, parents and skipIf; remove %s, or remove sleep to make it a code step", nameOr(s.Name, what), key, key)
			}
		}
		if s.Sleep > 0 {
			return s
		}
	}
	if f := v.Get("waitFor"); f != nil {
		for _, key := range []string{"retry", "timeout", "output", "concurrency", "rateLimit", "forEach", "workflow", "runsOn"} {
			if code := v.Get(key); code != nil {
				hint := "remove " + key
				switch key {
				case "output":
					hint = "its output is its event's payload, declared under events"
				case "timeout":
					hint = "bound the wait with waitFor's timeout"
				}
				d.probs.Add(code.KeyPos, "false", "wait step %s cannot have %s: a wait step runs no code and takes only name, parents, skipIf and waitFor; %s", nameOr(s.Name, what), key, hint)
			}
		}
		if s.WaitFor = d.waitFor(f.Value, "waitFor of "+what); s.WaitFor != nil {
			return s
		}
	}
	if f := v.Get("workflow"); f != nil {
		for _, key := range []string{"output", "forEach"} {
			if other := v.Get(key); other != nil {
				hint := "its output is the child run's outputs, by step"
				if key == "forEach" {
					hint = "make the map step's items start the child workflow from a step of their own"
				}
				d.probs.Add(other.KeyPos, "false", "child workflow step %s cannot have %s: %s; remove %s", nameOr(s.Name, what), key, hint, key)
			}
		}
		s.Child = d.child(f.Value, "workflow of "+what)
	}
	if f := v.Get("retry"); f != nil {
		s.retry = d.retry(f.Value, "retry", what)
	}
	s.Retry = s.retry.over(d.defaults).apply(spec.DefaultRetryPolicy())
	s.Timeout = d.timeout
	if f := v.Get("timeout"); f != nil {
		s.Timeout = d.duration(f.Value, "timeout of "+what)
	}
	if f := v.Get("output"); f != nil {
		s.Output = d.schema(f.Value, "output of "+what)
	}
	if f := v.Get("concurrency"); f != nil {
		s.Concurrency = d.concurrency(f.Value, "concurrency of "+what)
	}
	if f := v.Get("rateLimit"); f != nil {
		s.RateLimit = d.rateLimit(f.Value, "rateLimit of "+what)
	}
	if f := v.Get("forEach"); f != nil {
		s.ForEach = d.forEach(f.Value, "forEach of "+what)
	}
	s.RunsOn = d.runsOn
	if f := v.Get("runsOn"); f != nil {
		s.RunsOn = d.labels(f.Value, "runsOn of "+what)
	}
	return s
}

// events reads the workflow's events: a mapping from each event's name
// to the JSON Schema of its payload.
func (d *decoder) events(v *Value) []*Event {
	if !d.isMap(v, "events", "a mapping from each event's name to the JSON Schema of its payload, such as {delivered: {type: object, properties: {...}}}") {
		return nil
	}
	var out []*Event
	for _, f := range v.Fields {
		ev := &Event{Pos: f.KeyPos}
		if !validName(f.Key) {
			msg := fmt.Sprintf("event name %q is invalid: use lowercase letters, digits and '-', starting with a letter and not ending with '-'", f.Key)
			if s := suggestName(f.Key); s != "" {
				msg += fmt.Sprintf(" (such as %q)", s)
			}
			d.probs.Add(f.KeyPos, "pattern", "%s", msg)
		} else {
			ev.Name = f.Key
		}
		ev.Schema = d.schema(f.Value, fmt.Sprintf("the payload of event %q", f.Key))
		out = append(out, ev)
	}
	return out
}

// child reads the workflow a child workflow step starts; the input
// expressions are type-checked once the child is resolved.
func (d *decoder) child(v *Value, what string) *Child {
	if !d.isMap(v, what, `a mapping such as {name: shipment, input: {orderId: input.orderId}}`) {
		return nil
	}
	d.keys(v, what, "name", "file", "input")
	c := &Child{Pos: v.Pos}
	f := d.required(v, "name", what+" has no name: add name: <the workflow to start>")
	if f == nil {
		return nil
	}
	if c.Name, c.NamePos = d.name(f.Value, "workflow name"), f.Value.Pos; c.Name == "" {
		return nil
	}
	if f := v.Get("file"); f != nil {
		c.File, c.FilePos = d.str(f.Value, "file of "+what), f.Value.Pos
	}
	if f := v.Get("input"); f != nil {
		if !d.isMap(f.Value, "input of "+what, `a mapping from each input field of the child to a CEL expression, such as {orderId: input.orderId}`) {
			return c
		}
		if len(f.Value.Fields) == 0 {
			d.probs.Add(f.Value.Pos, "minProperties", "input of %s is empty: give the child's input fields, or leave input out for the step's code to build the input", what)
			return c
		}
		c.Input = []*ChildField{}
		for _, field := range f.Value.Fields {
			switch {
			case field.Value.Kind != KindString:
				d.probs.Add(field.Value.Pos, "type", "input field %s of %s must be a string holding a CEL expression, such as \"input.orderId\", not %s", field.Key, what, field.Value.Kind)
			case strings.TrimSpace(field.Value.Str) == "":
				d.probs.Add(field.Value.Pos, "minLength", "empty expression for input field %s of %s: write a CEL expression over input and parents", field.Key, what)
			default:
				c.Input = append(c.Input, &ChildField{Name: field.Key, NamePos: field.KeyPos,
					Expr: Expr{Source: strings.TrimRight(field.Value.Str, "\n"), Pos: field.Value.Pos, style: field.Value.Style}})
			}
		}
	}
	return c
}

// waitFor reads the event a wait step waits for; the key is type-checked
// by checkInputExprs, the event by check.
func (d *decoder) waitFor(v *Value, what string) *WaitFor {
	if !d.isMap(v, what, `a mapping such as {event: delivered, key: input.orderId, timeout: 72h}`) {
		return nil
	}
	d.keys(v, what, "event", "key", "timeout", "onTimeout")
	w := &WaitFor{Pos: v.Pos}
	f := d.required(v, "event", what+" has no event: add event: <one of the workflow's events>")
	if f == nil {
		return nil
	}
	if w.Event, w.EventPos = d.name(f.Value, "event name"), f.Value.Pos; w.Event == "" {
		return nil
	}
	if f := v.Get("key"); f != nil {
		if key, ok := d.keyExpr(f, what); ok {
			w.Key = &key
		}
	}
	if f := v.Get("timeout"); f != nil {
		w.Timeout = d.duration(f.Value, "timeout of "+what)
	}
	if f := v.Get("onTimeout"); f != nil {
		w.OnTimeout, w.OnTimeoutPos = d.str(f.Value, "onTimeout of "+what), f.Value.Pos
		if w.OnTimeout != spec.OnTimeoutFail && w.OnTimeout != spec.OnTimeoutSkip {
			d.probs.Add(f.Value.Pos, "enum", "onTimeout of %s must be %s or %s, not %q", what, spec.OnTimeoutFail, spec.OnTimeoutSkip, w.OnTimeout)
			w.OnTimeout = ""
		}
	}
	return w
}

// forEach reads the items of a map step; the items expression is
// type-checked later by checkConditions.
func (d *decoder) forEach(v *Value, what string) *ForEach {
	if !d.isMap(v, what, `a mapping such as {items: "input.lineItems", concurrency: 10}`) {
		return nil
	}
	d.keys(v, what, "items", "concurrency")
	fe := &ForEach{Pos: v.Pos}
	f := d.required(v, "items", what+" has no items: add items: <a CEL expression whose value is a list, such as input.lineItems>")
	if f == nil {
		return nil
	}
	switch {
	case f.Value.Kind != KindString:
		d.probs.Add(f.Value.Pos, "type", "the items of %s must be a string holding a CEL expression, such as \"input.lineItems\", not %s", what, f.Value.Kind)
		return nil
	case strings.TrimSpace(f.Value.Str) == "":
		d.probs.Add(f.Value.Pos, "minLength", "empty items in %s: write a CEL expression whose value is a list, such as \"input.lineItems\"", what)
		return nil
	}
	fe.Items = Expr{Source: strings.TrimRight(f.Value.Str, "\n"), Pos: f.Value.Pos, style: f.Value.Style}
	if c := v.Get("concurrency"); c != nil {
		if fe.Concurrency = d.atLeastOne(c.Value, "concurrency of "+what, "at least one item must be able to run"); fe.Concurrency == 0 {
			return nil
		}
	}
	return fe
}

func nameOr(name, what string) string {
	if name != "" {
		return fmt.Sprintf("%q", name)
	}
	return what
}

func (d *decoder) parents(v *Value, what string) []Ref {
	if v.Kind != KindList {
		d.probs.Add(v.Pos, "type", "parents of %s must be a list of step names, such as parents: [validate], not %s", what, v.Kind)
		return nil
	}
	var out []Ref
	seen := map[string]bool{}
	for _, item := range v.Items {
		name := d.name(item, "parent name")
		if name == "" {
			continue
		}
		if seen[name] {
			d.probs.Add(item.Pos, "uniqueItems", "%s lists parent %q twice; remove one", what, name)
			continue
		}
		seen[name] = true
		out = append(out, Ref{Name: name, Pos: item.Pos})
	}
	return out
}

func (d *decoder) skipIf(v *Value, what string) []Expr {
	if v.Kind != KindList {
		hint := ""
		if v.Kind == KindString {
			hint = fmt.Sprintf(`; write skipIf: [%q]`, v.Str)
		}
		d.probs.Add(v.Pos, "type", "skipIf of %s must be a list of CEL conditions, not %s%s", what, v.Kind, hint)
		return nil
	}
	var out []Expr
	for _, item := range v.Items {
		switch {
		case item.Kind != KindString:
			d.probs.Add(item.Pos, "type", "a skipIf condition must be a string holding a CEL expression, not %s; quote it", item.Kind)
		case strings.TrimSpace(item.Str) == "":
			d.probs.Add(item.Pos, "minLength", "empty skipIf condition: write a CEL expression such as \"!parents.validate.isValid\", or remove the entry")
		default:
			out = append(out, Expr{Source: strings.TrimRight(item.Str, "\n"), Pos: item.Pos, style: item.Style})
		}
	}
	return out
}

// priority reads the workflow's priority: an integer, or a string holding
// a CEL expression of type int over the input (checked by checkPriority).
func (d *decoder) priority(v *Value) *Expr {
	switch {
	case v.Kind == KindNumber && strings.ContainsAny(v.Str, ".eE"):
		d.probs.Add(v.Pos, "type", "priority %s is not an integer: use 1 (low), 2 (normal) or 3 (high)", v.Str)
	case v.Kind == KindNumber:
		if n, err := strconv.Atoi(v.Str); err != nil || !spec.ValidPriority(n) {
			rule := "maximum" // as the format schema says of a number out of range
			if strings.HasPrefix(v.Str, "-") || n < spec.PriorityLow {
				rule = "minimum"
			}
			d.probs.Add(v.Pos, rule, "priority %s is out of range: use 1 (low), 2 (normal) or 3 (high)", v.Str)
			return nil
		}
		return &Expr{Source: v.Str, Pos: v.Pos, style: v.Style}
	case v.Kind == KindString && strings.TrimSpace(v.Str) == "":
		d.probs.Add(v.Pos, "minLength", "empty priority: write 1 (low), 2 (normal) or 3 (high), or a CEL expression over the input such as \"input.express ? 3 : 2\"")
	case v.Kind == KindString:
		return &Expr{Source: strings.TrimRight(v.Str, "\n"), Pos: v.Pos, style: v.Style}
	default:
		d.probs.Add(v.Pos, "type", "priority must be 1 (low), 2 (normal) or 3 (high), or a string holding a CEL expression over the input, not %s", v.Kind)
	}
	return nil
}

// concurrency reads a concurrency limit: {key: <CEL over the input>, max:
// <whole number >= 1>}. The key is type-checked by checkInputExprs.
func (d *decoder) concurrency(v *Value, what string) *Concurrency {
	if !d.isMap(v, what, `a mapping such as {key: "input.customerId", max: 2}`) {
		return nil
	}
	d.keys(v, what, "key", "max")
	c := &Concurrency{Pos: v.Pos}
	ok := false
	if f := d.required(v, "key", what+" has no key: add key: <a CEL expression over the input, such as input.customerId>"); f != nil {
		c.Key, ok = d.keyExpr(f, what)
	}
	if f := d.required(v, "max", what+" has no max: add max: <how many tasks of one key may be in progress at once>"); f == nil {
		ok = false
	} else if c.Max = d.atLeastOne(f.Value, "max of "+what, "at least one task of a key must be able to run"); c.Max == 0 {
		ok = false
	}
	if !ok {
		return nil
	}
	return c
}

// runConcurrency reads a limit on whole runs: {key: <CEL over the
// input>, max: <whole number >= 1>, strategy: queue | cancelInProgress |
// cancelNewest}. The key is type-checked by checkInputExprs.
func (d *decoder) runConcurrency(v *Value) *RunConcurrency {
	const what = "runConcurrency"
	if !d.isMap(v, what, `a mapping such as {key: "input.customerId", max: 1, strategy: queue}`) {
		return nil
	}
	d.keys(v, what, "key", "max", "strategy")
	c := &RunConcurrency{Pos: v.Pos, Strategy: spec.StrategyQueue}
	keyOK := false
	if f := d.required(v, "key", what+" has no key: add key: <a CEL expression over the input, such as input.customerId>"); f != nil {
		c.Key, keyOK = d.keyExpr(f, what)
	}
	if f := d.required(v, "max", what+" has no max: add max: <how many runs of one key may be in progress at once>"); f != nil {
		c.Max = d.atLeastOne(f.Value, "max of "+what, "at least one run of a key must be able to run")
	}
	if f := v.Get("strategy"); f != nil {
		name := d.str(f.Value, "strategy of "+what)
		var names []string
		for _, s := range spec.RunStrategies() {
			names = append(names, string(s))
		}
		switch {
		case slices.Contains(names, name):
			c.Strategy = spec.RunStrategy(name)
		case f.Value.Kind == KindString:
			hint := ""
			if guess := suggest.Closest(name, names); guess != "" {
				hint = fmt.Sprintf("; did you mean %q?", guess)
			}
			d.probs.Add(f.Value.Pos, "enum", "strategy of %s must be one of %s, not %q%s", what, strings.Join(names, ", "), name, hint)
		}
	}
	if !keyOK {
		return nil
	}
	return c // with a bad max or strategy, reported, so that its key is still checked
}

// debounce reads a debounce: {key: <CEL over the input>, window:
// <duration>, maxWait: <duration>}. The key is type-checked by
// checkInputExprs.
func (d *decoder) debounce(v *Value) *Debounce {
	const what = "debounce"
	if !d.isMap(v, what, `a mapping such as {key: "input.customerId", window: 30s}`) {
		return nil
	}
	d.keys(v, what, "key", "window", "maxWait")
	db := &Debounce{Pos: v.Pos}
	keyOK := false
	if f := d.required(v, "key", what+" has no key: add key: <a CEL expression over the input, such as input.customerId>"); f != nil {
		db.Key, keyOK = d.keyExpr(f, what)
	}
	if f := d.required(v, "window", what+" has no window: add window: <how long a run waits for a newer trigger of its key, such as 30s>"); f != nil {
		db.Window = d.duration(f.Value, "window of "+what)
	}
	if f := v.Get("maxWait"); f != nil {
		if db.MaxWait = d.duration(f.Value, "maxWait of "+what); db.MaxWait > 0 && db.Window > 0 && db.MaxWait < db.Window {
			d.probs.Add(f.Value.Pos, "minimum", "maxWait of %s (%s) is below its window (%s): leave it out for no bound, or make it at least the window", what, db.MaxWait, db.Window)
		}
		db.MaxWaitPos = f.Value.Pos
	}
	if !keyOK {
		return nil
	}
	return db // with a bad window or maxWait, reported, so that its key is still checked
}

// keyExpr reads the key of a limit: a string holding a CEL expression
// over the input, type-checked later by checkInputExprs.
func (d *decoder) keyExpr(f *Field, what string) (Expr, bool) {
	switch {
	case f.Value.Kind != KindString:
		d.probs.Add(f.Value.Pos, "type", "the key of %s must be a string holding a CEL expression over the input, such as \"input.customerId\", not %s", what, f.Value.Kind)
	case strings.TrimSpace(f.Value.Str) == "":
		d.probs.Add(f.Value.Pos, "minLength", "empty key in %s: write a CEL expression over the input, such as \"input.customerId\"", what)
	default:
		return Expr{Source: strings.TrimRight(f.Value.Str, "\n"), Pos: f.Value.Pos, style: f.Value.Style}, true
	}
	return Expr{}, false
}

// atLeastOne reads a whole number of at least 1, or reports why it is
// not one (why it must be: because) and returns 0.
func (d *decoder) atLeastOne(v *Value, what, because string) int {
	if v.Kind == KindNumber && strings.HasPrefix(v.Str, "-") {
		d.probs.Add(v.Pos, "minimum", "%s must be at least 1: %s", what, because)
		return 0
	}
	n, ok := d.count(v, what)
	if ok && n < 1 {
		d.probs.Add(v.Pos, "minimum", "%s must be at least 1: %s", what, because)
	}
	if !ok || n < 1 {
		return 0
	}
	return n
}

// rateLimit reads a rate limit: {key: <CEL over the input>, limit: <whole
// number >= 1>, per: <duration>, burst: <whole number >= 1>}; key and
// burst are optional. The key is type-checked by checkInputExprs.
func (d *decoder) rateLimit(v *Value, what string) *RateLimit {
	if !d.isMap(v, what, `a mapping such as {key: "input.customerId", limit: 10, per: 1m}`) {
		return nil
	}
	d.keys(v, what, "key", "limit", "per", "burst")
	r := &RateLimit{Pos: v.Pos, Burst: 1}
	ok := true
	if f := v.Get("key"); f != nil {
		key, valid := d.keyExpr(f, what)
		r.Key, ok = &key, valid
	}
	if f := d.required(v, "limit", what+" has no limit: add limit: <how many tasks of one key may start per interval>"); f == nil {
		ok = false
	} else if r.Limit = d.atLeastOne(f.Value, "limit of "+what, "at least one task of a key must be able to start per interval"); r.Limit == 0 {
		ok = false
	}
	if f := d.required(v, "per", what+" has no per: add per: <the interval the limit counts starts over, such as 1s or 1m>"); f == nil {
		ok = false
	} else if r.Per = d.duration(f.Value, "per of "+what); r.Per == 0 {
		ok = false
	}
	if f := v.Get("burst"); f != nil {
		if r.Burst = d.atLeastOne(f.Value, "burst of "+what, "it is how many tasks of a key may start at once after a quiet spell"); r.Burst == 0 {
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return r
}

func (d *decoder) onFailure(v *Value) *OnFailure {
	if !d.isMap(v, "onFailure", "a mapping such as {name: notify-admin}") {
		return nil
	}
	d.keys(v, "onFailure", "name", "retry", "timeout", "runsOn")
	h := &OnFailure{Pos: v.Pos}
	if f := d.required(v, "name", "onFailure has no name: add name: <handler-name>"); f != nil {
		h.Name, h.Pos = d.name(f.Value, "onFailure name"), f.Value.Pos
	}
	if f := v.Get("retry"); f != nil {
		h.retry = d.retry(f.Value, "onFailure.retry", "")
	}
	h.Retry = h.retry.over(d.defaults).apply(spec.DefaultRetryPolicy())
	h.Timeout = d.timeout
	if f := v.Get("timeout"); f != nil {
		h.Timeout = d.duration(f.Value, "onFailure.timeout")
	}
	h.RunsOn = d.runsOn
	if f := v.Get("runsOn"); f != nil {
		h.RunsOn = d.labels(f.Value, "onFailure.runsOn")
	}
	return h
}

// isMap reports whether v is a mapping, and reports a problem if not.
func (d *decoder) isMap(v *Value, what, example string) bool {
	if v.Kind == KindMap {
		return true
	}
	d.probs.Add(v.Pos, "type", "%s must be %s, not %s", what, example, v.Kind)
	return false
}

// keys reports every key of m not in allowed (listed in the order
// messages show them).
func (d *decoder) keys(m *Value, what string, allowed ...string) {
	for _, f := range m.Fields {
		if contains(allowed, f.Key) {
			continue
		}
		if guess := suggest.Closest(f.Key, allowed); guess != "" {
			d.probs.Add(f.KeyPos, "additionalProperties", "unknown key %q in %s; did you mean %q?", f.Key, what, guess)
			continue
		}
		d.probs.Add(f.KeyPos, "additionalProperties", "unknown key %q in %s (allowed: %s)", f.Key, what, strings.Join(allowed, ", "))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// required returns m's entry for key, reporting msg at m when it is absent.
func (d *decoder) required(m *Value, key, msg string) *Field {
	f := m.Get(key)
	if f == nil {
		d.probs.Add(m.Pos, "required", "%s", msg)
	}
	return f
}

func (d *decoder) str(v *Value, what string) string {
	if v.Kind != KindString {
		d.probs.Add(v.Pos, "type", "%s must be a string, not %s", what, v.Kind)
		return ""
	}
	return v.Str
}

// name checks a workflow, step or handler name and returns it, or "" when
// it is invalid.
func (d *decoder) name(v *Value, what string) string {
	if v.Kind != KindString {
		d.probs.Add(v.Pos, "type", "%s must be a string such as order-processing, not %s", what, v.Kind)
		return ""
	}
	if !validName(v.Str) {
		msg := fmt.Sprintf("%s %q is invalid: use lowercase letters, digits and '-', starting with a letter and not ending with '-'", what, v.Str)
		if s := suggestName(v.Str); s != "" {
			msg += fmt.Sprintf(" (such as %q)", s)
		}
		d.probs.Add(v.Pos, "pattern", "%s", msg)
		return ""
	}
	return v.Str
}

// duration parses a positive Go duration, or reports why it cannot and
// returns 0.
func (d *decoder) duration(v *Value, what string) time.Duration {
	const how = "write a number and a unit such as 1500ms, 30s, 5m or 24h"
	if v.Kind != KindString {
		if v.Kind == KindNumber {
			d.probs.Add(v.Pos, "type", "%s must be a Go duration with a unit, such as 30s or 5m, not a bare number", what)
		} else {
			d.probs.Add(v.Pos, "type", "%s must be a Go duration (%s), not %s", what, how, v.Kind)
		}
		return 0
	}
	dur, err := time.ParseDuration(v.Str)
	switch {
	case err != nil && strings.HasSuffix(v.Str, "d"):
		d.probs.Add(v.Pos, "pattern", "%s: %q is not a Go duration; Go durations have no days, write hours such as 24h", what, v.Str)
	case err != nil:
		d.probs.Add(v.Pos, "pattern", "%s: %q is not a Go duration; %s", what, v.Str, how)
	case dur <= 0:
		d.probs.Add(v.Pos, "pattern", "%s: %q is not positive; %s", what, v.Str, how)
	default:
		return dur
	}
	return 0
}

// labels reads runsOn: a mapping from each worker label a step needs to
// its value, both strings (see spec.CheckLabel). An empty mapping needs
// none, which lets a step opt out of defaults.runsOn. Only valid labels
// are kept; each problem is reported where it is written.
func (d *decoder) labels(v *Value, what string) map[string]string {
	const example = `a mapping from each worker label to its value, such as {gpu: "true", region: eu-west-1}`
	if !d.isMap(v, what, example) {
		return nil
	}
	if len(v.Fields) > spec.MaxStepLabels {
		d.probs.Add(v.Pos, "maxProperties", "%s has %d labels, more than the %d allowed", what, len(v.Fields), spec.MaxStepLabels)
	}
	out := map[string]string{}
	for _, f := range v.Fields {
		if err := spec.CheckLabelKey(f.Key); err != nil {
			d.probs.Add(f.KeyPos, "pattern", "%s: %v", what, err)
			continue
		}
		switch {
		case f.Value.Kind != KindString:
			hint := ""
			if f.Value.Kind == KindBool || f.Value.Kind == KindNumber {
				hint = fmt.Sprintf(`; quote it: %s: %q`, f.Key, f.Value.Str)
				if f.Value.Kind == KindBool {
					hint = fmt.Sprintf(`; quote it: %s: "%t"`, f.Key, f.Value.Bool)
				}
			}
			d.probs.Add(f.Value.Pos, "type", "label %s of %s must be a string, not %s%s", f.Key, what, f.Value.Kind, hint)
		default:
			if err := spec.CheckLabelValue(f.Value.Str); err != nil {
				d.probs.Add(f.Value.Pos, "pattern", "label %s of %s: %v", f.Key, what, err)
				continue
			}
			out[f.Key] = f.Value.Str
		}
	}
	return out
}
