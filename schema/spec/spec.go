// Package spec is the model of a workflow definition, shared by the
// generator (gen), the engine (runtime) and anything else that reads
// workflows: the declarative form of a workflow file, with defaults
// applied, and nothing executable. It imports only the standard library,
// so that every other package can depend on it and it on none of them.
//
// The runtime package re-exports these types under the names generated
// code uses (runtime.WorkflowSpec, runtime.StepSpec, ...).
package spec

import (
	"maps"
	"time"
)

// Workflow is the declarative form of a workflow: what a workflow YAML
// file says, with defaults already applied. Generated code embeds one as
// a literal; nothing in it is executable, so the same spec can be stored,
// compared and compiled by any process.
type Workflow struct {
	// Name is the workflow's name: lowercase letters, digits and '-'.
	Name string `json:"name"`
	// Description is free text for people.
	Description string `json:"description,omitempty"`
	// Source is the path of the YAML file the spec was generated from, for
	// messages only.
	Source string `json:"source,omitempty"`
	// InputSchema is the JSON Schema (as JSON text) every run input must
	// satisfy.
	InputSchema string `json:"inputSchema"`
	// Priority is a CEL expression of type int over input, the run input,
	// giving each run's priority: 1 (low) to 3 (high). Empty means 2,
	// normal. A trigger's WithPriority overrides it.
	Priority string `json:"priority,omitempty"`
	// Concurrency, when set, limits the steps of the workflow's runs in
	// progress at once by key; a step's own Concurrency replaces it.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	// RunConcurrency, when set, limits the workflow's whole runs in
	// progress at once by key, and says what a run beyond the limit does.
	RunConcurrency *RunConcurrency `json:"runConcurrency,omitempty"`
	// Debounce, when set, lets only the last of a burst of triggers with
	// the same key run.
	Debounce *Debounce `json:"debounce,omitempty"`
	// RateLimit, when set, limits how often the workflow's code steps
	// start, by key; a step's own RateLimit replaces it.
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
	// Timeout, when positive, bounds each run as a whole: a run still
	// running Timeout after it started fails ("run deadline of 1h
	// passed"), its running steps are cancelled and its failure handler
	// runs. A trigger's WithTimeout may shorten it. Zero means no limit.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Steps are the steps in the order the file lists them.
	Steps []Step `json:"steps"`
	// OnFailure, when set, names a handler run once when a run fails.
	OnFailure *OnFailure `json:"onFailure,omitempty"`
	// Schedules start runs of the workflow on cron schedules.
	Schedules []Schedule `json:"schedules,omitempty"`
	// Events are the events the workflow's wait steps wait for, and
	// those that start its runs (StartOn).
	Events []Event `json:"events,omitempty"`
	// StartOn are the events that start runs of the workflow, each one
	// of Events: publishing one (Engine.PublishEvent) starts a run of
	// every workflow that starts on it and whose filter matches.
	StartOn []StartOn `json:"startOn,omitempty"`
}

// StartOn declares an event that starts runs of its workflow.
type StartOn struct {
	// Event names one of the workflow's Events.
	Event string `json:"event"`
	// If, when set, is a CEL condition over payload, the event's payload:
	// only an event for which it is true starts a run.
	If string `json:"if,omitempty"`
	// Input builds the run input: each field of it from a CEL expression
	// over payload. When it and InputExpr are empty, the payload is the
	// input.
	Input map[string]string `json:"input,omitempty"`
	// InputExpr, when set instead of Input, is one CEL expression over
	// payload whose value is the run input.
	InputExpr string `json:"inputExpr,omitempty"`
}

// StartsOn returns the startOn entries of the workflow for the event
// named event, in file order.
func (w *Workflow) StartsOn(event string) []StartOn {
	var out []StartOn
	for _, s := range w.StartOn {
		if s.Event == event {
			out = append(out, s)
		}
	}
	return out
}

// FillWaitOutputs gives each wait step without an output schema its
// event's payload schema: what the step completes with. Generated specs
// carry it already.
func (w *Workflow) FillWaitOutputs() {
	for i := range w.Steps {
		s := &w.Steps[i]
		if !s.IsWait() || s.OutputSchema != "" {
			continue
		}
		if ev, ok := w.Event(s.WaitFor.Event); ok {
			s.OutputSchema = ev.Schema
		}
	}
}

// Event returns the event of the workflow with the given name.
func (w *Workflow) Event(name string) (*Event, bool) {
	for i := range w.Events {
		if w.Events[i].Name == name {
			return &w.Events[i], true
		}
	}
	return nil, false
}

// Schedule starts a run of its workflow at every tick of a cron
// expression.
type Schedule struct {
	// Name identifies the schedule within its workflow; it is part of the
	// idempotency key of every run it starts.
	Name string `json:"name"`
	// Cron is a standard five-field cron expression ("0 3 * * *": 03:00
	// every day), or a descriptor such as @hourly or @daily.
	Cron string `json:"cron"`
	// Timezone is the IANA time zone the expression is read in
	// ("Europe/Amsterdam"); empty means UTC.
	Timezone string `json:"timezone,omitempty"`
	// Input is the run input as JSON text; empty means {}.
	Input string `json:"input,omitempty"`
	// Tenant is the runs' tenant; empty means the default tenant.
	Tenant string `json:"tenant,omitempty"`
}

// Step declares one step of a workflow.
type Step struct {
	// Name is unique within the workflow.
	Name string `json:"name"`
	// Parents are the steps this one waits for.
	Parents []string `json:"parents,omitempty"`
	// SkipIf are CEL conditions; the step is skipped when any is true.
	SkipIf []string `json:"skipIf,omitempty"`
	// Sleep, when positive, makes this a durable sleep step: it has no code
	// and completes Sleep after it becomes ready.
	Sleep time.Duration `json:"sleep,omitempty"`
	// Retry says how a failing attempt is retried.
	Retry RetryPolicy `json:"retry"`
	// Timeout bounds one attempt; zero means no limit.
	Timeout time.Duration `json:"timeout,omitempty"`
	// OutputSchema is the JSON Schema (as JSON text) of the step's output,
	// or empty when the step has no output.
	OutputSchema string `json:"outputSchema,omitempty"`
	// Concurrency, when set, limits how many of this step's tasks with
	// the same key are in progress at once, across every run and worker.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	// RateLimit, when set, limits how often this step's tasks with the
	// same key start, across every run and worker. On a map step it
	// applies to each item.
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
	// ForEach, when set, makes this a map step: its code runs once per
	// item of a list, each item in a run of its own, and its output is
	// the list of their outputs, in item order.
	ForEach *ForEach `json:"forEach,omitempty"`
	// Workflow, when set, makes this a child workflow step: each attempt
	// starts one run of another workflow and waits for it; the step's
	// output is that run's outputs by step (see ChildWorkflow).
	Workflow *ChildWorkflow `json:"workflow,omitempty"`
	// WaitFor, when set, makes this an event wait step: it runs no code
	// and completes with the payload of the first event of its kind sent
	// to its run or its key (see WaitFor).
	WaitFor *WaitFor `json:"waitFor,omitempty"`
	// RunsOn, when set, names the worker labels a worker must have, each
	// with the same value, to run the step (see Labels in labels.go):
	// only engines whose Config.Labels include them claim its tasks. On a
	// map step it applies to the step and to each item; on a child
	// workflow step to the step's own task, not to the child run. Sleep
	// and wait steps run no code and take none.
	RunsOn map[string]string `json:"runsOn,omitempty"`
}

// ChildWorkflow declares the run a child workflow step starts.
type ChildWorkflow struct {
	// Name is the workflow to start. The engine that runs the step must
	// know it (Engine.Register, or Engine.Workflow to start runs only).
	Name string `json:"name"`
	// Input builds the child's input: each field of it from a CEL
	// expression over input and parents (like skipIf). Empty means the
	// step's code returns the child's input.
	Input map[string]string `json:"input,omitempty"`
}

// WaitFor declares the event a wait step waits for.
type WaitFor struct {
	// Event names one of the workflow's Events.
	Event string `json:"event"`
	// Key, when set, is a CEL expression over input (a string, an int or
	// a bool) whose value is the wait's key: events sent with that key
	// reach it, as well as events sent to its run. Empty means only events
	// sent to the run.
	Key string `json:"key,omitempty"`
	// Timeout, when positive, bounds the wait: with no event by then, the
	// step is skipped or fails, as OnTimeout says.
	Timeout time.Duration `json:"timeout,omitempty"`
	// OnTimeout is what a wait that times out does: OnTimeoutFail (the
	// default when empty) or OnTimeoutSkip.
	OnTimeout string `json:"onTimeout,omitempty"`
}

// What a wait step does when its timeout passes with no event.
const (
	// OnTimeoutFail fails the step, and so the run.
	OnTimeoutFail = "fail"
	// OnTimeoutSkip skips the step; its children run without its output.
	OnTimeoutSkip = "skip"
)

// SkipsOnTimeout reports whether the wait is skipped, rather than failed,
// when it times out.
func (w *WaitFor) SkipsOnTimeout() bool { return w.OnTimeout == OnTimeoutSkip }

// Event declares an event that the workflow's wait steps wait for, and
// the JSON Schema of its payload.
type Event struct {
	// Name is the event's name: lowercase letters, digits and '-'.
	Name string `json:"name"`
	// Schema is the JSON Schema (as JSON text) of the payload, an object
	// schema. Events whose payload does not satisfy it are refused when
	// sent.
	Schema string `json:"schema"`
}

// ForEach declares the items of a map step.
type ForEach struct {
	// Items is a CEL expression over input and parents (like skipIf)
	// whose value is the list of items, such as input.lineItems.
	Items string `json:"items"`
	// Concurrency, when positive, bounds how many items of one run of
	// the step are in progress at once.
	Concurrency int `json:"concurrency,omitempty"`
	// ItemSchema is the JSON Schema (as JSON text) of one item, derived
	// from the type of Items by the generator.
	ItemSchema string `json:"itemSchema"`
}

// IsMap reports whether the step is a map step.
func (s *Step) IsMap() bool { return s.ForEach != nil }

// IsChild reports whether the step starts a child workflow.
func (s *Step) IsChild() bool { return s.Workflow != nil }

// IsWait reports whether the step waits for an event.
func (s *Step) IsWait() bool { return s.WaitFor != nil }

// RunsCode reports whether the step has code of its own to run: a plain
// code step, a map step (once per item) or a child workflow step whose
// input its code builds.
func (s *Step) RunsCode() bool {
	switch {
	case s.IsSleep(), s.IsWait():
		return false
	case s.IsChild():
		return len(s.Workflow.Input) == 0
	}
	return true
}

// ResultSchema is the JSON Schema (as JSON text) of what the step's
// children receive from it: its output, or for a map step the list of
// its items' outputs; empty when it has no output.
func (s *Step) ResultSchema() string {
	if s.IsMap() && s.OutputSchema != "" {
		return `{"type":"array","items":` + s.OutputSchema + `}`
	}
	return s.OutputSchema
}

// Concurrency is a concurrency limit by key: at most Max tasks whose runs
// have the same key are in progress (queued, running or waiting to retry)
// at once, across every worker; the others wait their turn, in order.
type Concurrency struct {
	// Key is a CEL expression over input, the run input, whose value (a
	// string, an int or a bool) is the key, such as input.customerId.
	Key string `json:"key"`
	// Max is the number of tasks with one key in progress at once (>= 1).
	Max int `json:"max"`
}

// RunConcurrency is a concurrency limit on whole runs by key: at most Max
// runs of the workflow with the same key are in progress (from their
// start until they complete, fail or are cancelled) at once, across every
// worker. Strategy says what a run triggered beyond the limit does.
type RunConcurrency struct {
	// Key is a CEL expression over input, the run input, whose value (a
	// string, an int or a bool) is the key, such as input.customerId.
	Key string `json:"key"`
	// Max is the number of runs with one key in progress at once (>= 1).
	Max int `json:"max"`
	// Strategy is what happens to a run triggered while Max runs of its
	// key are in progress; empty means StrategyQueue.
	Strategy RunStrategy `json:"strategy,omitempty"`
}

// Debounce lets only the last trigger of a key within a window run: each
// trigger creates a run that waits, its steps not claimable, for Window;
// a newer trigger of the same key within it cancels the waiting run and
// waits Window again. The run that waited Window without a newer trigger
// starts, or, when MaxWait is set, the newest run once MaxWait passed
// since the burst's first trigger.
type Debounce struct {
	// Key is a CEL expression over input, the run input, whose value (a
	// string, an int or a bool) is the key, such as input.customerId.
	Key string `json:"key"`
	// Window is how long a run waits for a newer trigger of its key (> 0).
	Window time.Duration `json:"window"`
	// MaxWait, when positive, bounds how long a burst of triggers puts
	// its run off, from the burst's first trigger (>= Window).
	MaxWait time.Duration `json:"maxWait,omitempty"`
}

// RunStrategy is what a run triggered beyond its RunConcurrency does.
type RunStrategy string

// The strategies of a RunConcurrency.
const (
	// StrategyQueue: the run is created and waits, its steps queued but
	// not claimable, until a run of its key ends; runs of a key start in
	// the order they were triggered.
	StrategyQueue RunStrategy = "queue"
	// StrategyCancelInProgress: the newest run wins; the oldest runs of
	// the key in progress are cancelled to make room for it.
	StrategyCancelInProgress RunStrategy = "cancelInProgress"
	// StrategyCancelNewest: the runs in progress win; the new run is
	// created and cancelled at once.
	StrategyCancelNewest RunStrategy = "cancelNewest"
)

// RunStrategies returns the valid strategies, in the order docs list
// them.
func RunStrategies() []RunStrategy {
	return []RunStrategy{StrategyQueue, StrategyCancelInProgress, StrategyCancelNewest}
}

// Effective returns the limit's strategy, StrategyQueue when unset.
func (l *RunConcurrency) Effective() RunStrategy {
	if l.Strategy == "" {
		return StrategyQueue
	}
	return l.Strategy
}

// RateLimit is a rate limit by key: tasks whose runs have the same key
// start (first attempts and retries alike) at most Limit times per Per,
// spaced Per/Limit apart, except that up to Burst may start at once after
// a quiet spell. So at most Limit+Burst-1 start in any window of length
// Per; at most Limit with the default Burst of 1. A task beyond the limit
// waits, queued, for its turn, oldest first.
type RateLimit struct {
	// Key is a CEL expression over input, the run input, whose value (a
	// string, an int or a bool) is the key; empty means one key for all
	// runs.
	Key string `json:"key,omitempty"`
	// Limit is how many tasks of one key start per Per (>= 1).
	Limit int `json:"limit"`
	// Per is the interval Limit is counted over (> 0).
	Per time.Duration `json:"per"`
	// Burst is how many tasks of one key may start at once after a quiet
	// spell (>= 1); 0 means 1.
	Burst int `json:"burst,omitempty"`
}

// Interval is the time between two starts of one key at the limit's
// rate, Per/Limit, rounded up to the microsecond (the stores' precision):
// rounding up keeps the rate at or under the limit.
func (l *RateLimit) Interval() time.Duration {
	d := l.Per / time.Duration(max(l.Limit, 1))
	if d%time.Microsecond != 0 || d == 0 {
		d = d.Truncate(time.Microsecond) + time.Microsecond
	}
	return d
}

// Bursts is Burst, or 1 when it is unset.
func (l *RateLimit) Bursts() int { return max(l.Burst, 1) }

// IsSleep reports whether the step is a durable sleep.
func (s *Step) IsSleep() bool { return s.Sleep > 0 }

// OnFailure declares the failure handler of a workflow.
type OnFailure struct {
	Name    string        `json:"name"`
	Retry   RetryPolicy   `json:"retry"`
	Timeout time.Duration `json:"timeout,omitempty"`
	// RunsOn is the worker labels the handler needs, as Step.RunsOn.
	RunsOn map[string]string `json:"runsOn,omitempty"`
}

// RetryPolicy says how often and how soon a failed attempt is retried: the
// n-th retry waits InitialDelay * BackoffFactor^(n-1), capped at MaxDelay.
type RetryPolicy struct {
	// MaxRetries is the number of attempts after the first; zero means a
	// failure is final.
	MaxRetries int `json:"maxRetries"`
	// InitialDelay is the wait before the first retry.
	InitialDelay time.Duration `json:"initialDelay"`
	// BackoffFactor multiplies the delay for each further retry (>= 1).
	BackoffFactor float64 `json:"backoffFactor"`
	// MaxDelay caps the delay.
	MaxDelay time.Duration `json:"maxDelay"`
}

// DefaultRetryPolicy is the policy of a step whose file says nothing about
// retries: no retry, and a 1s, 2s, 4s ... 1m schedule should retries be
// enabled with only maxRetries.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 0, InitialDelay: time.Second, BackoffFactor: 2, MaxDelay: time.Minute}
}

// Clone returns a deep copy of w.
func (w *Workflow) Clone() Workflow {
	out := *w
	out.Steps = make([]Step, len(w.Steps))
	for i, st := range w.Steps {
		st.Parents = append([]string(nil), st.Parents...)
		st.SkipIf = append([]string(nil), st.SkipIf...)
		if st.Concurrency != nil {
			c := *st.Concurrency
			st.Concurrency = &c
		}
		if st.RateLimit != nil {
			r := *st.RateLimit
			st.RateLimit = &r
		}
		if st.ForEach != nil {
			f := *st.ForEach
			st.ForEach = &f
		}
		if st.Workflow != nil {
			c := *st.Workflow
			c.Input = maps.Clone(c.Input)
			st.Workflow = &c
		}
		if st.WaitFor != nil {
			wf := *st.WaitFor
			st.WaitFor = &wf
		}
		st.RunsOn = maps.Clone(st.RunsOn)
		out.Steps[i] = st
	}
	if w.Concurrency != nil {
		c := *w.Concurrency
		out.Concurrency = &c
	}
	if w.RateLimit != nil {
		r := *w.RateLimit
		out.RateLimit = &r
	}
	if w.RunConcurrency != nil {
		r := *w.RunConcurrency
		out.RunConcurrency = &r
	}
	if w.Debounce != nil {
		d := *w.Debounce
		out.Debounce = &d
	}
	if w.OnFailure != nil {
		f := *w.OnFailure
		f.RunsOn = maps.Clone(f.RunsOn)
		out.OnFailure = &f
	}
	out.Schedules = append([]Schedule(nil), w.Schedules...)
	out.Events = append([]Event(nil), w.Events...)
	out.StartOn = nil
	for _, s := range w.StartOn {
		s.Input = maps.Clone(s.Input)
		out.StartOn = append(out.StartOn, s)
	}
	return out
}
