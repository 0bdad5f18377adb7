package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/internal/executor"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/condition"
	"github.com/effectivelabs/trellis/schema/spec"
)

// Map steps. A map step's task evaluates its forEach expression and
// spawns one run per item (store.Spawn), of the step's items workflow: a
// workflow of one step, the map step's code, whose input is the item. The
// runs are fair, limited, retried and recovered like any other. When they
// have all completed the task is woken and completes with the list of
// their outputs, in item order; when one ends otherwise it is woken at
// once and fails the run, which cancels the items still in progress.

// compileMap compiles the forEach of map step i, and the definition of
// its items workflow.
func (d *Definition) compileMap(i int, env *condition.Env) error {
	s := &d.spec.Steps[i]
	if d.items == nil {
		d.items = make([]*condition.ListExpr, len(d.spec.Steps))
		d.itemDefs = make([]*Definition, len(d.spec.Steps))
	}
	x, issues := env.CompileList(s.ForEach.Items)
	if len(issues) > 0 {
		return fmt.Errorf("compiling workflow %s: step %s: forEach %q: %s", d.spec.Name, s.Name, s.ForEach.Items, issues[0].Message)
	}
	d.items[i] = x
	items, err := Compile(itemsSpec(&d.spec, s))
	if err != nil {
		return fmt.Errorf("compiling workflow %s: step %s: items: %w", d.spec.Name, s.Name, err)
	}
	d.itemDefs[i] = items
	return nil
}

// itemsSpec is the workflow of the items of map step s of w.
func itemsSpec(w *WorkflowSpec, s *StepSpec) *WorkflowSpec {
	return &WorkflowSpec{
		Name:        spec.ItemsWorkflow(w.Name, s.Name),
		Description: fmt.Sprintf("The items of map step %s of workflow %s.", s.Name, w.Name),
		Source:      w.Source,
		InputSchema: s.ForEach.ItemSchema,
		Steps:       []StepSpec{{Name: s.Name, Retry: s.Retry, Timeout: s.Timeout, OutputSchema: s.OutputSchema}},
	}
}

// itemDefinitions returns the items workflows of d's map steps.
func (d *Definition) itemDefinitions() []*Definition {
	var out []*Definition
	for _, items := range d.itemDefs {
		if items != nil {
			out = append(out, items)
		}
	}
	return out
}

// spawnItems plans a claimed map task: one run per item of its forEach,
// except for items a run already completed in an earlier attempt (the
// task was recovered, or its run retried), whose outputs are kept.
func (p *planner) spawnItems(ctx context.Context, c store.ClaimedTask, def *Definition, step *dag.Step, parents map[string]json.RawMessage) (store.Spawn, error) {
	sp := store.Spawn{Attempt: executor.AttemptOf(c)}
	env, _ := def.conditions(step.Index)
	vars, err := env.Bind(c.Input, parents)
	if err != nil {
		return sp, fmt.Errorf("forEach of step %s: %w", step.Name, err)
	}
	items, err := def.items[step.Index].Eval(ctx, vars)
	if err != nil {
		return sp, fmt.Errorf("forEach of step %s: %w", step.Name, err)
	}
	if err := p.limits.checkItems(step.Name, len(items)); err != nil {
		return sp, NonRetryable(err)
	}
	for i, item := range items {
		// Each item is the input of a run.
		if err := p.limits.checkItemInput(step.Name, i, item); err != nil {
			return sp, NonRetryable(err)
		}
	}
	done := map[int]bool{}
	if c.Attempt > 1 {
		// A retried map step keeps the items its earlier attempts
		// completed, but not those of executions before a rerun of its
		// run: a rerun runs the step again, items and all.
		run, err := p.store.GetRun(ctx, c.Key.Run)
		if err != nil {
			return sp, err
		}
		earlier, err := p.store.ChildRuns(ctx, c.Key)
		if err != nil {
			return sp, err
		}
		for _, r := range earlier {
			if r.CreatedAt.Before(run.RerunAt) {
				continue
			}
			done[r.Parent.Index] = r.Status == store.RunCompleted
		}
	}
	itemsDef := def.itemDefs[step.Index]
	if err := p.defs.saveDefinition(ctx, itemsDef); err != nil {
		return sp, err
	}
	task, err := def.itemTask(ctx, step, c)
	if err != nil {
		return sp, err
	}
	for i, item := range items {
		if done[i] {
			continue
		}
		id, err := uuid.NewV7()
		if err != nil {
			return sp, err
		}
		sp.Runs = append(sp.Runs, store.NewRun{
			ID: id, Workflow: itemsDef.Name(), Version: itemsDef.Version(), Tenant: c.Tenant,
			Input: item, TraceContext: c.TraceContext,
			Parent: &store.ParentRun{ID: c.Key.Run, StepIndex: c.Key.Step, Index: i}, Tasks: []store.NewTask{task},
		})
	}
	return sp, nil
}

// itemTask is the task of each item run of a map step: the step's
// retries, its concurrency limit (forEach.concurrency, per run of the
// step, or the step's own) and its rate limit, keyed by the parent run's
// input.
func (d *Definition) itemTask(ctx context.Context, step *dag.Step, c store.ClaimedTask) (store.NewTask, error) {
	t := store.NewTask{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: step.MaxAttempts(), Labels: d.labels(step.Index)}
	if n := d.spec.Steps[step.Index].ForEach.Concurrency; n > 0 {
		t.Limit = store.Limit{Key: fmt.Sprintf("%s/%s:%s", d.spec.Name, step.Name, c.Key.Run), Max: n}
	}
	if !d.hasLimits() {
		return t, nil
	}
	tasks := make([]store.NewTask, len(d.graph.Steps))
	if err := d.taskLimits(ctx, c.Input, tasks); err != nil {
		return t, err
	}
	if l := tasks[step.Index].Limit; l.Key != "" {
		t.Limit = l
	}
	t.Rate = tasks[step.Index].Rate
	return t, nil
}

// collectItems ends a woken map task: its output is the list of its
// items' outputs, in item order, once every item completed; it fails
// when an item ended otherwise.
func (p *planner) collectItems(ctx context.Context, c store.ClaimedTask, def *Definition, step *dag.Step) (store.Results, error) {
	a := executor.AttemptOf(c)
	runs, err := p.store.ChildRuns(ctx, c.Key)
	if err != nil {
		return store.Results{}, err
	}
	// The last run of each index counts: an index is only run again when
	// its earlier run did not complete.
	last := make([]*store.RunWithTasks, 0, len(runs))
	for i := range runs {
		r := &runs[i]
		if n := len(last); n > 0 && last[n-1].Parent.Index == r.Parent.Index {
			last[n-1] = r
			continue
		}
		last = append(last, r)
	}
	for _, r := range last {
		if r.Status.Terminal() && r.Status != store.RunCompleted {
			return store.Results{Failures: []store.Failure{{Attempt: a, Error: itemFailure(r)}}}, nil
		}
	}
	var out bytes.Buffer
	out.WriteByte('[')
	for i, r := range last {
		if r.Status != store.RunCompleted {
			// Woken with an item still running: nothing ended otherwise,
			// so a store broke its promise; fail rather than guess.
			return store.Results{Failures: []store.Failure{{Attempt: a, Error: itemFailure(r)}}}, nil
		}
		if i > 0 {
			out.WriteByte(',')
		}
		if len(r.Tasks) == 0 || len(r.Tasks[0].Output) == 0 {
			out.WriteString("null")
			continue
		}
		out.Write(r.Tasks[0].Output)
	}
	out.WriteByte(']')
	var output []byte
	if def.spec.Steps[step.Index].OutputSchema != "" {
		output = out.Bytes()
	}
	return store.Results{Completions: []store.Completion{{Attempt: a, Woken: true, Output: output, Children: step.Children}}}, nil
}

// itemFailure says why an item's run did not complete.
func itemFailure(r *store.RunWithTasks) string {
	if r.Status == store.RunFailed && r.Failure != nil {
		return fmt.Sprintf("item %d failed (run %s): %s", r.Parent.Index, r.ID, r.Failure.Error)
	}
	return fmt.Sprintf("item %d was %s (run %s)", r.Parent.Index, r.Status, r.ID)
}
