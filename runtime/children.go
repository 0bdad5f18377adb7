package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/internal/executor"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/condition"
)

// Child workflow steps. Each attempt of a child workflow step starts one
// run of its child workflow (store.Spawn), with an input built from CEL
// expressions or returned by the step's code, and waits for it, WAITING,
// holding nothing. Woken when that run ends, it completes with the run's
// outputs by step when the run completed; otherwise the attempt failed
// and is retried as the step's retry policy says, each retry a new run.
// The step's timeout bounds each child run: at its deadline the run is
// cancelled and the attempt times out. A parent run that ends otherwise
// than completed cancels its running child runs (the stores' rule).

// compileChild compiles the input expressions of child workflow step i,
// if it has any.
func (d *Definition) compileChild(i int, env *condition.Env) error {
	s := &d.spec.Steps[i]
	if len(s.Workflow.Input) == 0 {
		return nil
	}
	if d.childInputs == nil {
		d.childInputs = make([]map[string]*condition.ValueExpr, len(d.spec.Steps))
	}
	fields := make(map[string]*condition.ValueExpr, len(s.Workflow.Input))
	for field, expr := range s.Workflow.Input {
		x, issues := env.CompileValue(expr)
		if len(issues) > 0 {
			return fmt.Errorf("compiling workflow %s: step %s: input field %s of workflow %s: %q: %s",
				d.spec.Name, s.Name, field, s.Workflow.Name, expr, issues[0].Message)
		}
		fields[field] = x
	}
	d.childInputs[i] = fields
	return nil
}

// childFields are the compiled input expressions of child workflow step
// i, by field; nil when its code builds the input.
func (d *Definition) childFields(i int) map[string]*condition.ValueExpr {
	if d.childInputs == nil {
		return nil
	}
	return d.childInputs[i]
}

// childInput builds the input of a child workflow step's run from its
// input expressions.
func (d *Definition) childInput(ctx context.Context, step *dag.Step, input []byte, parents map[string]json.RawMessage) (json.RawMessage, error) {
	env, _ := d.conditions(step.Index)
	vars, err := env.Bind(input, parents)
	if err != nil {
		return nil, fmt.Errorf("input of workflow %s: %w", d.spec.Steps[step.Index].Workflow.Name, err)
	}
	fields := d.childFields(step.Index)
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make(map[string]json.RawMessage, len(fields))
	for _, name := range names {
		v, err := fields[name].Eval(ctx, vars)
		if err != nil {
			return nil, fmt.Errorf("input field %s of workflow %s: %w", name, d.spec.Steps[step.Index].Workflow.Name, err)
		}
		out[name] = v
	}
	return json.Marshal(out)
}

// childDefinition returns the definition of the workflow a child
// workflow step starts, as this engine knows it.
func (p *planner) childDefinition(def *Definition, step *dag.Step) (*Definition, error) {
	name := def.spec.Steps[step.Index].Workflow.Name
	child, ok := p.registry.child(name)
	if !ok {
		return nil, fmt.Errorf("step %s starts workflow %s, which this engine does not know: register it (Engine.Register, or Engine.Workflow to start runs only) on every engine that runs %s",
			step.Name, name, def.Name())
	}
	return child, nil
}

// spawnChild starts the child run of one attempt of a child workflow
// step, with the given input (refused, for good, when the child's input
// schema refuses it).
func (p *planner) spawnChild(ctx context.Context, c store.ClaimedTask, def *Definition, step *dag.Step, input json.RawMessage, now time.Time) (store.Spawn, error) {
	sp := store.Spawn{Attempt: executor.AttemptOf(c)}
	child, err := p.childDefinition(def, step)
	if err != nil {
		return sp, err
	}
	if err := p.limits.checkInput(input); err != nil {
		return sp, NonRetryable(fmt.Errorf("step %s: the input of workflow %s: %w", step.Name, child.Name(), err))
	}
	if err := child.ValidateInput(input); err != nil {
		return sp, NonRetryable(fmt.Errorf("step %s: the input of workflow %s: %w", step.Name, child.Name(), err))
	}
	priority, err := child.runPriority(ctx, input)
	if err != nil {
		return sp, NonRetryable(err)
	}
	tasks := newTasks(child)
	if child.hasLimits() {
		if err := child.taskLimits(ctx, input, tasks); err != nil {
			return sp, NonRetryable(err)
		}
	}
	if err := p.defs.saveDefinition(ctx, child); err != nil {
		return sp, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return sp, err
	}
	// Index is the attempt: each attempt's run is told apart from those
	// of earlier attempts, which ChildRuns lists too.
	sp.Runs = []store.NewRun{{
		ID: id, Workflow: child.Name(), Version: child.Version(), Tenant: c.Tenant, Priority: priority,
		Input: input, TraceContext: c.TraceContext,
		Parent: &store.ParentRun{ID: c.Key.Run, StepIndex: c.Key.Step, Index: c.Attempt}, Tasks: tasks,
		Timeout: child.spec.Timeout,
	}}
	if step.Timeout > 0 {
		sp.Deadline = now.Add(step.Timeout)
	}
	return sp, nil
}

// collectChild ends a woken child workflow step: its attempt's run
// completed (the step completes with its outputs), ended otherwise (the
// attempt failed), or is still running past the step's timeout (it is
// cancelled, and the attempt timed out).
func (p *planner) collectChild(ctx context.Context, c store.ClaimedTask, def *Definition, step *dag.Step, now time.Time) (store.Results, error) {
	a := executor.AttemptOf(c)
	runs, err := p.store.ChildRuns(ctx, c.Key)
	if err != nil {
		return store.Results{}, err
	}
	var run *store.RunWithTasks
	for i := range runs {
		if runs[i].Parent.Index == c.Attempt {
			run = &runs[i]
		}
	}
	name := def.spec.Steps[step.Index].Workflow.Name
	try := c.Attempt - c.PriorAttempts
	fail := func(msg string, timedOut bool) store.Results {
		if delay, retry := dag.Retry(step.Retry, try, true); retry {
			return store.Results{Retries: []store.Retry{{Attempt: a, Error: msg, TimedOut: timedOut, At: now.Add(delay)}}}
		}
		return store.Results{Failures: []store.Failure{{Attempt: a, Error: msg, TimedOut: timedOut}}}
	}
	switch {
	case run == nil:
		// Woken with no run of this attempt: a store broke its promise;
		// fail rather than guess.
		return fail(fmt.Sprintf("the run of workflow %s that attempt %d started is missing", name, try), false), nil
	case run.Status == store.RunRunning:
		if _, err := p.store.CancelRuns(ctx, []uuid.UUID{run.ID}, now); err != nil {
			return store.Results{}, err
		}
		return fail(fmt.Sprintf("timed out after %v: workflow %s (run %s) was cancelled", step.Timeout, name, run.ID), true), nil
	case run.Status == store.RunFailed:
		return fail(fmt.Sprintf("workflow %s failed (run %s): %s", name, run.ID, p.childFailure(ctx, run)), false), nil
	case run.Status != store.RunCompleted:
		return fail(fmt.Sprintf("workflow %s was %s (run %s)", name, run.Status, run.ID), false), nil
	}
	out, err := p.childOutputs(ctx, run)
	if err != nil {
		return store.Results{}, err
	}
	if verr := def.validateOutput(step.Index, out); verr != nil {
		//nolint:nilerr // an output the step's schema refuses fails the step; it is no error of collecting it
		return store.Results{Failures: []store.Failure{{Attempt: a, Error: verr.Error()}}}, nil
	}
	return store.Results{Completions: []store.Completion{{Attempt: a, Woken: true, Output: out, Children: step.Children}}}, nil
}

// childOutputs is a completed child run's output as its parent step
// sees it: an object with the output of each of its steps that completed
// with one, by step name.
func (p *planner) childOutputs(ctx context.Context, run *store.RunWithTasks) (json.RawMessage, error) {
	def, err := p.defs.definition(ctx, run.Version)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	n := 0
	for _, t := range run.Tasks {
		if t.Status != store.TaskCompleted || len(t.Output) == 0 || t.Key.Step >= len(def.graph.Steps) || t.Kind == store.KindOnFailure {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		name, _ := json.Marshal(def.graph.Steps[t.Key.Step].Name)
		out.Write(name)
		out.WriteByte(':')
		out.Write(t.Output)
		n++
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// childFailure says which step of a failed child run failed, and how.
func (p *planner) childFailure(ctx context.Context, run *store.RunWithTasks) string {
	f := run.Failure
	if f == nil {
		return ""
	}
	def, err := p.defs.definition(ctx, run.Version)
	if err != nil || f.StepIndex < 0 || f.StepIndex >= len(def.graph.Steps) {
		return f.Error
	}
	return fmt.Sprintf("step %s: %s", def.graph.Steps[f.StepIndex].Name, f.Error)
}

// ChildRuns returns the runs that step step of run id started, by index
// (RunResult.Parent.Index), then oldest first: one per item of a map step
// in item order (an item that a retry of the run ran again has a run per
// try), one per attempt of a child workflow step. A run unknown to the store is ErrRunNotFound; a step the run's
// workflow does not have is an error too.
func (e *Engine) ChildRuns(ctx context.Context, id RunID, step string) ([]*RunResult, error) {
	run, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, storeErr(err, id)
	}
	def, err := e.definition(ctx, run.Version)
	if err != nil {
		return nil, err
	}
	s, ok := def.graph.Step(step)
	if !ok {
		return nil, fmt.Errorf("run %s: workflow %s has no step %s", id, def.Name(), step)
	}
	kids, err := e.store.ChildRuns(ctx, store.TaskKey{Run: id, Step: s.Index})
	if err != nil {
		return nil, storeErr(err, id)
	}
	out := make([]*RunResult, 0, len(kids))
	for _, k := range kids {
		kdef, err := e.definition(ctx, k.Version)
		if err != nil {
			return nil, err
		}
		out = append(out, resultOf(kdef, k.Run, k.Tasks))
	}
	return out, nil
}
