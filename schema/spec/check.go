package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Rule names a rule of the workflow model that a Problem breaks.
type Rule string

// The rules Check applies. Schemas and skipIf conditions are checked where
// they are compiled (the runtime, and lint with positions inside them); the
// rules here are about the shape of the workflow.
const (
	RuleName          Rule = "name"           // a name that is empty or not lowercase letters, digits and '-'
	RuleDuplicateStep Rule = "duplicate-step" // two steps with one name
	RuleHandlerName   Rule = "handler-name"   // the failure handler named like a step
	RuleSelfParent    Rule = "self-parent"    // a step that lists itself as a parent
	RuleUnknownParent Rule = "unknown-parent" // a parent that names no step
	RuleHandlerParent Rule = "handler-parent" // a parent that names the failure handler
	RuleRepeatParent  Rule = "repeat-parent"  // a parent listed twice
	RuleCycle         Rule = "cycle"          // steps that wait for each other
	RuleRetry         Rule = "retry"          // a retry policy that is not consistent
	RuleDuration      Rule = "duration"       // a negative sleep or timeout
	RuleConcurrency   Rule = "concurrency"    // a concurrency limit without a key, or below 1, or on a sleep step
	RuleRunLimit      Rule = "runConcurrency" // a run concurrency limit without a key, below 1, or with an unknown strategy
	RuleDebounce      Rule = "debounce"       // a debounce without a key or a positive window, or with a max wait below it, or beside runConcurrency
	RuleRateLimit     Rule = "rateLimit"      // a rate limit below 1 or over no time, or on a sleep step
	RuleForEach       Rule = "forEach"        // a map step without items, with a negative bound, or on a sleep step
	RuleSchedule      Rule = "schedule"       // a schedule without a valid, unique name or without a cron expression
	RuleKind          Rule = "kind"           // a step that is more than one of sleep, map, child workflow and wait
	RuleChild         Rule = "workflow"       // a child workflow step without a valid workflow name, or with an empty input field
	RuleWait          Rule = "waitFor"        // a wait step for an undeclared event, or with a bad timeout or onTimeout
	RuleEvent         Rule = "events"         // an event without a valid, unique name or without a payload schema
	RuleStartOn       Rule = "startOn"        // a startOn entry for an undeclared event, or with an empty input field
	RuleRunsOn        Rule = "runsOn"         // worker labels that are malformed or too many, or on a sleep or wait step
)

// Problem is one rule a workflow breaks, located by the step and field it
// is about so that a caller holding positions (lint) can point at them.
type Problem struct {
	Rule Rule
	// Step is the index of the step the problem is about, or -1 for the
	// workflow itself and for its failure handler (see Handler).
	Step int
	// Handler is true when the problem is about the failure handler.
	Handler bool
	// Name is the name of the step or handler the problem is about, as
	// declared (possibly invalid or empty); empty for the workflow.
	Name string
	// Field is the field of the step, handler or workflow: "name",
	// "parents", "sleep", "timeout", or "retry.<field>" in the JSON names
	// of RetryPolicy ("retry.maxDelay").
	Field string
	// Index is the element of a list field (the parent, for "parents"),
	// or -1.
	Index int
	// Other is the index of the step the problem relates to: the first
	// step of a duplicated name, the step a handler's name clashes with.
	// It is -1 when there is none.
	Other int
	// Cycle lists the names of the steps of a RuleCycle problem, in
	// parent-to-child order, starting and ending with the same step.
	Cycle []string
	// Message says what is wrong and how to fix it, in words a workflow
	// author knows; it does not repeat where (see String).
	Message string
}

// String formats the problem with its location, as in
//
//	step "ship": parents[1]: unknown parent "pack"
func (p Problem) String() string {
	return p.Where() + ": " + p.Message
}

// Where names the location of the problem without a file position:
// `step "ship": parents[1]`, `onFailure: retry.maxDelay`, `name`.
func (p Problem) Where() string {
	field := p.Field
	if p.Index >= 0 {
		field = fmt.Sprintf("%s[%d]", field, p.Index)
	}
	return p.owner() + ": " + field
}

func (p Problem) owner() string {
	switch {
	case p.Handler:
		return "onFailure"
	case p.Step >= 0 && p.Name != "":
		return fmt.Sprintf("step %q", p.Name)
	case p.Step >= 0:
		return fmt.Sprintf("steps[%d]", p.Step)
	}
	return "workflow"
}

// nameRule is how a valid name is spelt, for messages.
const nameRule = "use lowercase letters, digits and '-', starting with a letter and not ending with '-'"

// CheckName checks a workflow or step name: lowercase letters, digits and
// '-', starting with a letter and not ending with '-'.
func CheckName(name string) error {
	if !validName(name) {
		return fmt.Errorf("name %s", nameProblem(name))
	}
	return nil
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-' && i < len(name)-1)
		if !ok {
			return false
		}
	}
	return true
}

// ItemsWorkflow is the name of the workflow whose runs are the items of
// map step step of workflow workflow: workflow/step, a name no workflow
// file can take.
func ItemsWorkflow(workflow, step string) string { return workflow + "/" + step }

// isItemsName reports whether name is an ItemsWorkflow name.
func isItemsName(name string) bool {
	w, s, ok := strings.Cut(name, "/")
	return ok && validName(w) && validName(s)
}

func nameProblem(name string) string {
	if name == "" {
		return "is empty: " + nameRule
	}
	return fmt.Sprintf("%q is invalid: %s", name, nameRule)
}

// Check applies the rules of the workflow model and returns every problem
// it finds, in declaration order; none means the workflow is valid in
// shape. The generator, lint and the runtime all call Check, so a
// workflow lint accepts is one the runtime accepts.
//
// The rules: every name is valid (CheckName) and step names are unique,
// the failure handler's too; parents name other steps, once each, and
// never the failure handler; the steps form no cycle; sleeps and timeouts
// are not negative; and every retry policy is consistent (see
// RetryPolicy.Check).
func (w *Workflow) Check() []Problem {
	c := checker{w: w}
	c.names()
	parents := c.parents()
	c.cycles(parents)
	c.settings()
	return c.problems
}

type checker struct {
	w        *Workflow
	problems []Problem
}

func (c *checker) add(p Problem) {
	c.problems = append(c.problems, p)
}

func (c *checker) stepProblem(rule Rule, step int, field string, index int, format string, args ...any) {
	c.add(Problem{Rule: rule, Step: step, Name: c.w.Steps[step].Name, Field: field, Index: index, Other: -1, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) names() {
	if !validName(c.w.Name) && !isItemsName(c.w.Name) {
		c.add(Problem{Rule: RuleName, Step: -1, Field: "name", Index: -1, Other: -1, Message: nameProblem(c.w.Name)})
	}
	first := map[string]int{}
	for i, s := range c.w.Steps {
		if !validName(s.Name) {
			c.stepProblem(RuleName, i, "name", -1, "%s", nameProblem(s.Name))
			continue
		}
		if j, dup := first[s.Name]; dup {
			c.add(Problem{Rule: RuleDuplicateStep, Step: i, Name: s.Name, Field: "name", Index: -1, Other: j,
				Message: fmt.Sprintf("step name %q is used twice; step names must be unique", s.Name)})
			continue
		}
		first[s.Name] = i
	}
	if h := c.w.OnFailure; h != nil {
		if !validName(h.Name) {
			c.add(Problem{Rule: RuleName, Step: -1, Handler: true, Name: h.Name, Field: "name", Index: -1, Other: -1, Message: nameProblem(h.Name)})
		} else if j, clash := first[h.Name]; clash {
			c.add(Problem{Rule: RuleHandlerName, Step: -1, Handler: true, Name: h.Name, Field: "name", Index: -1, Other: j,
				Message: fmt.Sprintf("onFailure name %q is also the name of a step; give the failure handler a name of its own", h.Name)})
		}
	}
}

// parents checks every parent reference and returns the parent lists as
// step indexes, leaving out the references it reported.
func (c *checker) parents() [][]int {
	index := c.w.stepIndex()
	handler := ""
	if c.w.OnFailure != nil {
		handler = c.w.OnFailure.Name
	}
	parents := make([][]int, len(c.w.Steps))
	for i, s := range c.w.Steps {
		for j, p := range s.Parents {
			pi, ok := index[p]
			switch {
			case p == s.Name:
				c.stepProblem(RuleSelfParent, i, "parents", j, "a step cannot be its own parent; remove this parent")
			case !ok && p == handler:
				c.stepProblem(RuleHandlerParent, i, "parents", j, "parent %q is the onFailure handler, which runs only when a run fails and cannot be a parent", p)
			case !ok:
				c.stepProblem(RuleUnknownParent, i, "parents", j, "unknown parent %q", p)
			case slices.Contains(parents[i], pi):
				c.stepProblem(RuleRepeatParent, i, "parents", j, "parent %q is listed twice; remove one", p)
			default:
				parents[i] = append(parents[i], pi)
			}
		}
	}
	return parents
}

// cycles reports every independent cycle: after reporting one, it removes
// the parent link that closes it and looks again.
func (c *checker) cycles(parents [][]int) {
	links := make([][]int, len(parents))
	for i := range parents {
		links[i] = slices.Clone(parents[i])
	}
	for range c.w.Steps {
		cycle := findCycle(links)
		if cycle == nil {
			return
		}
		names := make([]string, len(cycle))
		for i, n := range cycle {
			names[i] = c.w.Steps[n].Name
		}
		// The cycle starts at its earliest-declared step, whose parent
		// list holds the link that closes it.
		first, last := cycle[0], cycle[len(cycle)-2]
		link := slices.Index(c.w.Steps[first].Parents, c.w.Steps[last].Name)
		c.add(Problem{Rule: RuleCycle, Step: first, Name: c.w.Steps[first].Name, Field: "parents", Index: link, Other: -1, Cycle: names,
			Message: fmt.Sprintf("steps form a cycle: %s; a step cannot wait for itself, remove one of these parent links", strings.Join(names, " -> "))})
		links[first] = slices.DeleteFunc(links[first], func(p int) bool { return p == last })
	}
}

func (c *checker) settings() {
	c.events()
	c.startOn()
	if c.w.Timeout < 0 {
		c.add(Problem{Rule: RuleDuration, Step: -1, Field: "timeout", Index: -1, Other: -1,
			Message: fmt.Sprintf("timeout %s is negative", c.w.Timeout)})
	}
	for i := range c.w.Steps {
		s := &c.w.Steps[i]
		c.kind(i)
		if s.Sleep < 0 {
			c.stepProblem(RuleDuration, i, "sleep", -1, "sleep %s is negative", s.Sleep)
		}
		if s.Timeout < 0 {
			c.stepProblem(RuleDuration, i, "timeout", -1, "timeout %s is negative", s.Timeout)
		}
		if f := s.ForEach; f != nil {
			switch {
			case s.IsSleep():
				c.stepProblem(RuleForEach, i, "forEach", -1, "a sleep step has no code to run per item; remove forEach or sleep")
			case strings.TrimSpace(f.Items) == "":
				c.stepProblem(RuleForEach, i, "forEach", -1, "forEach needs items, a CEL expression whose value is a list, such as input.lineItems")
			case f.Concurrency < 0:
				c.stepProblem(RuleForEach, i, "forEach", -1, "forEach concurrency %d is negative; use a positive bound, or leave it out for none", f.Concurrency)
			case f.Concurrency > 0 && s.Concurrency != nil:
				c.stepProblem(RuleForEach, i, "forEach", -1, "a map step takes forEach.concurrency or concurrency, not both: each item holds one slot")
			}
		}
		if s.IsSleep() || s.IsWait() {
			what := "a sleep step"
			if s.IsWait() {
				what = "a wait step"
				c.wait(i)
			}
			if s.Concurrency != nil {
				c.stepProblem(RuleConcurrency, i, "concurrency", -1, "%s runs no code and takes no concurrency limit; remove concurrency", what)
			}
			if s.RateLimit != nil {
				c.stepProblem(RuleRateLimit, i, "rateLimit", -1, "%s runs no code and takes no rate limit; remove rateLimit", what)
			}
			if len(s.RunsOn) > 0 {
				c.stepProblem(RuleRunsOn, i, "runsOn", -1, "%s runs no code on a worker and takes no runsOn; remove runsOn", what)
			}
			continue // it runs no code, so it has no retries
		}
		if s.IsChild() {
			c.child(i)
		}
		if l := s.Concurrency; l != nil {
			for _, m := range l.problems() {
				c.stepProblem(RuleConcurrency, i, "concurrency", -1, "%s", m)
			}
		}
		if l := s.RateLimit; l != nil {
			for _, m := range l.problems() {
				c.stepProblem(RuleRateLimit, i, "rateLimit", -1, "%s", m)
			}
		}
		for _, m := range CheckLabels(s.RunsOn, MaxStepLabels) {
			c.stepProblem(RuleRunsOn, i, "runsOn", -1, "%s", m)
		}
		for _, p := range s.Retry.Check() {
			p.Step, p.Name = i, s.Name
			c.add(p)
		}
	}
	if l := c.w.Concurrency; l != nil {
		for _, m := range l.problems() {
			c.add(Problem{Rule: RuleConcurrency, Step: -1, Field: "concurrency", Index: -1, Other: -1, Message: m})
		}
	}
	if l := c.w.RunConcurrency; l != nil {
		for _, m := range l.problems() {
			c.add(Problem{Rule: RuleRunLimit, Step: -1, Field: "runConcurrency", Index: -1, Other: -1, Message: m})
		}
	}
	if d := c.w.Debounce; d != nil {
		for _, m := range d.problems() {
			c.add(Problem{Rule: RuleDebounce, Step: -1, Field: "debounce", Index: -1, Other: -1, Message: m})
		}
		if c.w.RunConcurrency != nil {
			c.add(Problem{Rule: RuleDebounce, Step: -1, Field: "debounce", Index: -1, Other: -1,
				Message: "debounce and runConcurrency cannot be combined yet: keep one of them"})
		}
	}
	if l := c.w.RateLimit; l != nil {
		for _, m := range l.problems() {
			c.add(Problem{Rule: RuleRateLimit, Step: -1, Field: "rateLimit", Index: -1, Other: -1, Message: m})
		}
	}
	seen := map[string]bool{}
	for i, sc := range c.w.Schedules {
		switch {
		case !validName(sc.Name):
			c.add(Problem{Rule: RuleSchedule, Step: -1, Field: "schedules", Index: i, Other: -1, Message: "schedule name " + nameProblem(sc.Name)})
		case seen[sc.Name]:
			c.add(Problem{Rule: RuleSchedule, Step: -1, Field: "schedules", Index: i, Other: -1,
				Message: fmt.Sprintf("schedule name %q is used twice; schedule names must be unique", sc.Name)})
		}
		seen[sc.Name] = true
		if strings.TrimSpace(sc.Cron) == "" {
			c.add(Problem{Rule: RuleSchedule, Step: -1, Field: "schedules", Index: i, Other: -1,
				Message: "a schedule needs a cron expression such as \"0 3 * * *\""})
		}
	}
	if h := c.w.OnFailure; h != nil {
		if h.Timeout < 0 {
			c.add(Problem{Rule: RuleDuration, Step: -1, Handler: true, Name: h.Name, Field: "timeout", Index: -1, Other: -1,
				Message: fmt.Sprintf("timeout %s is negative", h.Timeout)})
		}
		for _, p := range h.Retry.Check() {
			p.Handler, p.Name = true, h.Name
			c.add(p)
		}
		for _, m := range CheckLabels(h.RunsOn, MaxStepLabels) {
			c.add(Problem{Rule: RuleRunsOn, Step: -1, Handler: true, Name: h.Name, Field: "runsOn", Index: -1, Other: -1, Message: m})
		}
	}
}

// kind reports a step that declares more than one of sleep, forEach,
// workflow and waitFor: each makes the step a kind of its own.
func (c *checker) kind(i int) {
	s := &c.w.Steps[i]
	var kinds []string
	if s.IsSleep() {
		kinds = append(kinds, "sleep")
	}
	if s.IsMap() {
		kinds = append(kinds, "forEach")
	}
	if s.IsChild() {
		kinds = append(kinds, "workflow")
	}
	if s.IsWait() {
		kinds = append(kinds, "waitFor")
	}
	if len(kinds) > 1 && !(len(kinds) == 2 && kinds[0] == "sleep" && kinds[1] == "forEach") { // reported with forEach
		c.stepProblem(RuleKind, i, kinds[1], -1, "a step takes one of sleep, forEach, workflow and waitFor, but this one has %s; split it into steps", strings.Join(kinds, " and "))
	}
}

// child checks the workflow a child workflow step starts.
func (c *checker) child(i int) {
	w := c.w.Steps[i].Workflow
	if !validName(w.Name) {
		c.stepProblem(RuleChild, i, "workflow", -1, "the child workflow's name %s", nameProblem(w.Name))
	}
	for _, field := range slices.Sorted(maps.Keys(w.Input)) {
		if strings.TrimSpace(w.Input[field]) == "" {
			c.stepProblem(RuleChild, i, "workflow", -1, "input field %q of the child workflow has no expression; write a CEL expression over input and parents", field)
		}
	}
}

// wait checks the event a wait step waits for, and its timeout.
func (c *checker) wait(i int) {
	s := &c.w.Steps[i]
	w := s.WaitFor
	ev, ok := c.w.Event(w.Event)
	switch {
	case w.Event == "":
		c.stepProblem(RuleWait, i, "waitFor", -1, "waitFor needs an event: name one of the workflow's events")
	case !ok:
		c.stepProblem(RuleWait, i, "waitFor", -1, "event %q is not declared: add it to the workflow's events with the JSON Schema of its payload", w.Event)
	case s.OutputSchema != "" && s.OutputSchema != ev.Schema:
		c.stepProblem(RuleWait, i, "waitFor", -1, "a wait step's output is the payload of its event %q; it takes no output schema of its own", w.Event)
	}
	if w.Timeout < 0 {
		c.stepProblem(RuleWait, i, "waitFor", -1, "timeout %s is negative", w.Timeout)
	}
	switch w.OnTimeout {
	case "", OnTimeoutFail, OnTimeoutSkip:
		if w.OnTimeout != "" && w.Timeout == 0 {
			c.stepProblem(RuleWait, i, "waitFor", -1, "onTimeout %s applies only with a timeout; add timeout, such as 72h", w.OnTimeout)
		}
	default:
		c.stepProblem(RuleWait, i, "waitFor", -1, "onTimeout %q is neither %s nor %s", w.OnTimeout, OnTimeoutFail, OnTimeoutSkip)
	}
	if s.Timeout != 0 {
		c.stepProblem(RuleWait, i, "timeout", -1, "a wait step runs no code, so it has no attempt to time out; bound the wait with waitFor's timeout")
	}
}

// events checks the workflow's events: valid, unique names and payload
// schemas.
func (c *checker) events() {
	seen := map[string]bool{}
	for i, ev := range c.w.Events {
		switch {
		case !validName(ev.Name):
			c.add(Problem{Rule: RuleEvent, Step: -1, Field: "events", Index: i, Other: -1, Message: "event name " + nameProblem(ev.Name)})
		case seen[ev.Name]:
			c.add(Problem{Rule: RuleEvent, Step: -1, Field: "events", Index: i, Other: -1,
				Message: fmt.Sprintf("event name %q is used twice; event names must be unique", ev.Name)})
		}
		seen[ev.Name] = true
		if strings.TrimSpace(ev.Schema) == "" {
			c.add(Problem{Rule: RuleEvent, Step: -1, Field: "events", Index: i, Other: -1,
				Message: fmt.Sprintf("event %q needs the JSON Schema of its payload", ev.Name)})
		}
	}
}

// startOn checks the events that start the workflow: each declared under
// events, with no empty expression. Index is the entry of StartOn.
func (c *checker) startOn() {
	for i, st := range c.w.StartOn {
		add := func(format string, args ...any) {
			c.add(Problem{Rule: RuleStartOn, Step: -1, Field: "startOn", Index: i, Other: -1, Message: fmt.Sprintf(format, args...)})
		}
		if _, ok := c.w.Event(st.Event); !ok {
			add("event %q is not declared: add it to the workflow's events with the JSON Schema of its payload", st.Event)
		}
		if len(st.Input) > 0 && st.InputExpr != "" {
			add("give the input field by field (input) or as one expression (inputExpr), not both")
		}
		for name, x := range st.Input {
			if strings.TrimSpace(x) == "" {
				add("input field %s has an empty expression: write a CEL expression over payload", name)
			}
		}
	}
}

// Check returns the problems of a retry policy, each with Rule RuleRetry,
// Field naming the offending field and Step -1. The zero policy (no
// retries) is valid; any other must have a non-negative MaxRetries, a
// positive InitialDelay, a BackoffFactor of at least 1, and a MaxDelay of
// at least InitialDelay.
func (p RetryPolicy) Check() []Problem {
	if p == (RetryPolicy{}) {
		return nil
	}
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Rule: RuleRetry, Step: -1, Field: "retry." + field, Index: -1, Other: -1, Message: fmt.Sprintf(format, args...)})
	}
	if p.MaxRetries < 0 {
		add("maxRetries", "maxRetries %d is negative; 0 means a failure is final", p.MaxRetries)
	}
	if p.InitialDelay <= 0 {
		add("initialDelay", "initialDelay %s must be positive", p.InitialDelay)
	}
	if p.BackoffFactor < 1 {
		add("backoffFactor", "backoffFactor %g must be at least 1 (1 keeps the delay fixed, 2 doubles it for each retry)", p.BackoffFactor)
	}
	if p.InitialDelay > 0 && p.MaxDelay < p.InitialDelay {
		add("maxDelay", "maxDelay %s is shorter than initialDelay %s: raise maxDelay or lower initialDelay", p.MaxDelay, p.InitialDelay)
	}
	return out
}

// MaySkip reports, per step, whether the step can end SKIPPED: it has
// skipIf conditions, or is a wait step skipped when it times out, or it
// has parents and every one of them may be skipped (a step whose parents
// were all skipped is skipped too). A child may rely on a parent that
// cannot be skipped having run. Parents that do
// not resolve, and steps on a cycle, count as not skippable; call Check
// first to know the answer is meaningful.
func (w *Workflow) MaySkip() []bool {
	index := w.stepIndex()
	parents := make([][]int, len(w.Steps))
	for i, s := range w.Steps {
		for _, p := range s.Parents {
			if pi, ok := index[p]; ok && pi != i {
				parents[i] = append(parents[i], pi)
			}
		}
	}
	may := make([]bool, len(w.Steps))
	for _, i := range topoOrder(parents) {
		if s := &w.Steps[i]; len(s.SkipIf) > 0 || s.IsWait() && s.WaitFor.SkipsOnTimeout() {
			may[i] = true
			continue
		}
		may[i] = len(parents[i]) > 0
		for _, p := range parents[i] {
			may[i] = may[i] && may[p]
		}
	}
	return may
}

// stepIndex maps each step name to the index of its first declaration.
func (w *Workflow) stepIndex() map[string]int {
	index := make(map[string]int, len(w.Steps))
	for i, s := range w.Steps {
		if _, dup := index[s.Name]; !dup {
			index[s.Name] = i
		}
	}
	return index
}

// findCycle returns one cycle of the graph given as parent lists, as node
// indexes in parent-to-child order that start and end with the same node
// (the earliest-declared of the cycle), or nil when there is none.
func findCycle(parents [][]int) []int {
	const (
		unvisited = iota
		active
		done
	)
	state := make([]int, len(parents))
	var stack, found []int
	var visit func(n int) bool
	visit = func(n int) bool {
		state[n] = active
		stack = append(stack, n)
		for _, p := range parents[n] {
			switch state[p] {
			case active:
				// The stack holds a child-to-parent path; the cycle is the
				// part from p to n, reversed into parent-to-child order.
				path := slices.Clone(stack[slices.Index(stack, p):])
				slices.Reverse(path)
				low := 0
				for i := range path {
					if path[i] < path[low] {
						low = i
					}
				}
				found = slices.Concat(path[low:], path[:low], path[low:low+1])
				return true
			case unvisited:
				if visit(p) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	for n := range parents {
		if state[n] == unvisited && visit(n) {
			return found
		}
	}
	return nil
}

// topoOrder returns the node indexes with every parent before its
// children; ties keep declaration order. Nodes on a cycle are left out.
func topoOrder(parents [][]int) []int {
	pending := make([]int, len(parents))
	children := make([][]int, len(parents))
	for i, ps := range parents {
		pending[i] = len(ps)
		for _, p := range ps {
			children[p] = append(children[p], i)
		}
	}
	var order, ready []int
	for i := range parents {
		if pending[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, c := range children[n] {
			if pending[c]--; pending[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return order
}

func (l *Concurrency) problems() []string {
	var out []string
	if strings.TrimSpace(l.Key) == "" {
		out = append(out, "a concurrency limit needs a key, a CEL expression over the input such as input.customerId")
	}
	if l.Max < 1 {
		out = append(out, fmt.Sprintf("max %d is below 1: at least one task of a key must be able to run", l.Max))
	}
	return out
}

func (l *RunConcurrency) problems() []string {
	var out []string
	if strings.TrimSpace(l.Key) == "" {
		out = append(out, "a run concurrency limit needs a key, a CEL expression over the input such as input.customerId")
	}
	if l.Max < 1 {
		out = append(out, fmt.Sprintf("max %d is below 1: at least one run of a key must be able to run", l.Max))
	}
	if l.Strategy != "" && !slices.Contains(RunStrategies(), l.Strategy) {
		out = append(out, fmt.Sprintf("strategy %q is not one of %s", l.Strategy, strategyList()))
	}
	return out
}

func (d *Debounce) problems() []string {
	var out []string
	if strings.TrimSpace(d.Key) == "" {
		out = append(out, "a debounce needs a key, a CEL expression over the input such as input.customerId")
	}
	if d.Window <= 0 {
		out = append(out, fmt.Sprintf("window %s is not positive: a debounce waits some time for a newer trigger, such as 30s", d.Window))
	}
	if d.MaxWait < 0 || (d.MaxWait > 0 && d.MaxWait < d.Window) {
		out = append(out, fmt.Sprintf("maxWait %s is below the window %s: leave it out for no bound, or make it at least the window", d.MaxWait, d.Window))
	}
	return out
}

func strategyList() string {
	names := make([]string, 0, 3)
	for _, s := range RunStrategies() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

func (l *RateLimit) problems() []string {
	var out []string
	if l.Limit < 1 {
		out = append(out, fmt.Sprintf("limit %d is below 1: at least one task of a key must be able to start per interval", l.Limit))
	}
	if l.Per <= 0 {
		out = append(out, fmt.Sprintf("per %s is not positive: a rate limit counts starts over some time, such as 1s or 1m", l.Per))
	}
	if l.Burst < 0 {
		out = append(out, fmt.Sprintf("burst %d is negative: leave it out for 1, or allow more tasks to start at once", l.Burst))
	}
	return out
}
