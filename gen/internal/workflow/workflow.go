// Package workflow reads Trellis workflow files: it decodes the YAML
// strictly, validates it against the format's JSON Schema
// (schema/workflow.schema.json), and checks what a schema cannot say:
// that parents exist and form no cycle, that skipIf conditions type-check
// against the input and parent output schemas, that retry policies and
// durations make sense, and that every embedded JSON Schema compiles.
//
// Every problem is collected, with its line and column, in one pass: a
// user fixing a file should see everything wrong with it at once. The
// result is a Workflow model with effective settings (defaults merged)
// that the code generator (package golang) turns into Go.
package workflow

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/effectivelabs/trellis/schema/spec"
)

// Workflow is a parsed workflow file. When Parse reports problems the
// model is partial: fields whose values were wrong are zero, and schemas
// that did not compile have OK false.
type Workflow struct {
	// File is the path the file was read from, as given.
	File string
	// Name is the workflow's name and NamePos where it is written.
	Name        string
	NamePos     Pos
	Description string
	// Input is the JSON Schema of the run input.
	Input *Schema
	// Priority is the expression giving each run's priority (an integer
	// written as such is an expression too), or nil for the default.
	Priority *Expr
	// Concurrency is the workflow's concurrency limit, or nil.
	Concurrency *Concurrency
	// RunConcurrency is the workflow's limit on whole runs, or nil.
	RunConcurrency *RunConcurrency
	// Debounce is the workflow's debounce, or nil.
	Debounce *Debounce
	// RateLimit is the workflow's rate limit, or nil.
	RateLimit *RateLimit
	// Timeout bounds each run as a whole; zero for none.
	Timeout time.Duration
	// Steps are the steps in file order.
	Steps []*Step
	// OnFailure is the failure handler, or nil.
	OnFailure *OnFailure
	// Schedules are the cron schedules, in file order.
	Schedules []*Schedule
	// Events are the events wait steps wait for, and those that start
	// the workflow, in file order.
	Events []*Event
	// StartOn are the events that start the workflow, in file order.
	StartOn []*StartOn
}

// Event is an event the workflow's wait steps wait for.
type Event struct {
	Name string
	// Pos is where the name is written.
	Pos Pos
	// Schema is the JSON Schema of its payload.
	Schema *Schema
}

// Event returns the event with the given name.
func (w *Workflow) Event(name string) (*Event, bool) {
	for _, ev := range w.Events {
		if ev.Name == name {
			return ev, true
		}
	}
	return nil, false
}

// Schedule is a cron schedule that starts runs of the workflow.
type Schedule struct {
	Name     string
	Pos      Pos // where the name is written, or the schedule when it has none
	Cron     string
	CronPos  Pos
	Timezone string
	TZPos    Pos
	// Input is the run input as written, or nil for {}.
	Input  *Value
	Tenant string
}

// Step is one step with its effective settings.
type Step struct {
	Name string
	// Pos is where the step's name is written (or the step itself, when
	// the name is missing).
	Pos     Pos
	Parents []Ref
	SkipIf  []Expr
	// Sleep is positive for a durable sleep step, which has no code.
	Sleep time.Duration
	// Retry is the effective policy: the step's retry over defaults.retry
	// over spec.DefaultRetryPolicy, field by field. Zero for sleep steps.
	Retry spec.RetryPolicy
	// Timeout is the effective timeout; zero means none.
	Timeout time.Duration
	// Output is the JSON Schema of the step's output, or nil.
	Output *Schema
	// Concurrency is the step's own concurrency limit, or nil.
	Concurrency *Concurrency
	// RateLimit is the step's own rate limit, or nil.
	RateLimit *RateLimit
	// ForEach makes the step a map step, or is nil.
	ForEach *ForEach
	// Child makes the step a child workflow step, or is nil.
	Child *Child
	// WaitFor makes the step an event wait step, or is nil.
	WaitFor *WaitFor
	// RunsOn is the worker labels the step needs: its own runsOn, or
	// defaults.runsOn; empty for none.
	RunsOn map[string]string
	// MaySkip is true when the step can end SKIPPED: it has skipIf, or it
	// has parents and every one of them may be skipped. A child sees a
	// parent that may be skipped as optional.
	MaySkip bool
	// label names the step in messages: step "charge", or steps[2] when
	// its name is missing or invalid.
	label string
	// retry is what the step's own retry mapping sets, for locating
	// problems of the effective policy.
	retry retryOverride
}

// IsSleep reports whether the step is a durable sleep step.
func (s *Step) IsSleep() bool { return s.Sleep > 0 }

// IsMap reports whether the step is a map step.
func (s *Step) IsMap() bool { return s.ForEach != nil }

// IsChild reports whether the step starts a child workflow.
func (s *Step) IsChild() bool { return s.Child != nil }

// IsWait reports whether the step waits for an event.
func (s *Step) IsWait() bool { return s.WaitFor != nil }

// RunsCode reports whether the step has code of its own: it is not a
// sleep or a wait, nor a child workflow step whose input is built by
// expressions.
func (s *Step) RunsCode() bool {
	switch {
	case s.IsSleep(), s.IsWait():
		return false
	case s.IsChild():
		return s.Child.Input == nil
	}
	return true
}

// Child declares the workflow a child workflow step starts.
type Child struct {
	// Pos is where the workflow mapping is written.
	Pos Pos
	// Name is the child workflow's name, written at NamePos.
	Name    string
	NamePos Pos
	// File is the child's workflow file as written (relative to this
	// one), or "" to find it by name in the same directory.
	File    string
	FilePos Pos
	// Input builds the child's input field by field, in file order; nil
	// when the step's code returns it.
	Input []*ChildField
	// Workflow is the child workflow, once resolved (see Resolver); nil
	// when it could not be.
	Workflow *Workflow
}

// ChildField is one field of a child workflow's input and the expression
// that gives it.
type ChildField struct {
	Name    string
	NamePos Pos
	Expr    Expr
}

// WaitFor declares the event a wait step waits for.
type WaitFor struct {
	Pos      Pos
	Event    string
	EventPos Pos
	// Key is the expression over input giving the wait's key, or nil.
	Key *Expr
	// Timeout bounds the wait; zero means none.
	Timeout time.Duration
	// OnTimeout is spec.OnTimeoutFail, spec.OnTimeoutSkip, or "".
	OnTimeout    string
	OnTimeoutPos Pos
}

// ForEach declares the items of a map step.
type ForEach struct {
	Pos   Pos
	Items Expr
	// Concurrency bounds one run's items in progress; 0 means no bound.
	Concurrency int
	// Item is the JSON Schema of one item, derived from the type of
	// Items when it type-checks; nil until then.
	Item *Schema
}

// Ref is a reference to a step by name, as written in parents.
type Ref struct {
	Name string
	Pos  Pos
}

// Expr is a skipIf condition: its CEL source and where it is written.
type Expr struct {
	Source string
	Pos    Pos
	// style is how the scalar was written, which locating a position
	// within the expression depends on.
	style yaml.Style
}

// Concurrency is a concurrency limit: its key expression and max.
type Concurrency struct {
	Key Expr
	Max int
	// Pos is where the limit is written.
	Pos Pos
}

// RunConcurrency is a limit on whole runs: its key expression, max and
// strategy.
type RunConcurrency struct {
	Key      Expr
	Max      int
	Strategy spec.RunStrategy
	// Pos is where the limit is written.
	Pos Pos
}

// Debounce is a debounce: its key expression, window and max wait (0
// for none).
type Debounce struct {
	Key     Expr
	Window  time.Duration
	MaxWait time.Duration
	// Pos is where it is written, MaxWaitPos its maxWait.
	Pos, MaxWaitPos Pos
}

// RateLimit is a rate limit: its key expression (nil for one key for
// all runs), how many starts per interval, and the burst (1 unless set).
type RateLimit struct {
	Key   *Expr
	Limit int
	Per   time.Duration
	Burst int
	// Pos is where the limit is written.
	Pos Pos
}

// OnFailure is the failure handler with its effective settings.
type OnFailure struct {
	Name    string
	Pos     Pos
	Retry   spec.RetryPolicy
	Timeout time.Duration
	// RunsOn is the worker labels the handler needs (see Step.RunsOn).
	RunsOn map[string]string
	// retry is what the handler's own retry mapping sets.
	retry retryOverride
}

// Schema is a JSON Schema embedded in a workflow file.
type Schema struct {
	// Value is the schema as written, with positions.
	Value *Value
	// JSON is its canonical text: compact, keys sorted.
	JSON string
	// OK is true when the schema compiled without problems, so that it can
	// be mapped to Go types and used to type-check conditions.
	OK bool
}

// Step returns the step with the given name.
func (w *Workflow) Step(name string) (*Step, bool) {
	for _, s := range w.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Parser parses and checks workflow files. It holds the compiled format
// schema, so reuse one Parser for many files. It is safe for concurrent
// use.
type Parser struct {
	format *formatSchema
}

// NewParser returns a Parser.
func NewParser() (*Parser, error) {
	f, err := newFormatSchema()
	if err != nil {
		return nil, err
	}
	return &Parser{format: f}, nil
}

// Parse reads a workflow file. file names it in problems; src is its
// content. It returns the model (nil only when src is not YAML at all)
// and every problem found, sorted by position.
func (p *Parser) Parse(file string, src []byte) (*Workflow, []Problem) {
	return p.ParseWith(file, src, nil)
}

// ParseWith is Parse, looking up the workflows that child workflow steps
// start with r; with r nil, a child workflow step is reported as one that
// cannot be checked.
func (p *Parser) ParseWith(file string, src []byte, r Resolver) (*Workflow, []Problem) {
	probs := NewProblems(file)
	root := load(src, probs)
	if root == nil {
		return nil, probs.List()
	}
	if root.Kind != KindMap {
		probs.Add(root.Pos, "type", "a workflow file must be a mapping with name, input and steps, not %s", root.Kind)
		return nil, probs.List()
	}
	p.format.validate(root, probs)
	d := &decoder{probs: probs, src: src}
	w := d.workflow(root)
	w.File = file
	d.check(w)
	resolveChildren(w, r, probs)
	checkConditions(w, d.lines(), probs)
	checkInputExprs(w, d.lines(), probs)
	checkSchedules(w, probs)
	checkStartOn(w, d.lines(), probs)
	return w, probs.List()
}
