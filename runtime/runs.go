package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
)

// trigger validates the input and creates the run with all its tasks.
func (e *Engine) trigger(ctx context.Context, def *Definition, input json.RawMessage, o RunOptions) (RunRef, error) {
	if err := o.checkOne(def.Name()); err != nil {
		return RunRef{}, err
	}
	refs, err := e.create(ctx, def, []json.RawMessage{input}, []string{o.IdempotencyKey}, o)
	if err != nil {
		return RunRef{}, err
	}
	return refs[0], nil
}

// triggerMany creates one run per input, each with its key of
// o.IdempotencyKeys (if given).
func (e *Engine) triggerMany(ctx context.Context, def *Definition, inputs []json.RawMessage, o RunOptions) ([]RunRef, error) {
	if err := o.checkMany(def.Name(), len(inputs)); err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, nil
	}
	return e.create(ctx, def, inputs, o.IdempotencyKeys, o)
}

// create validates every input, then creates all the runs in one store
// call: all of them, or none. keys[i], when keys is not nil, is the
// idempotency key of inputs[i]; the caller has checked that keys are
// distinct. With tracing, the trigger's span context is stored with the
// runs (see internal/telemetry/tracing.go).
func (e *Engine) create(ctx context.Context, def *Definition, inputs []json.RawMessage, keys []string, o RunOptions) (refs []RunRef, err error) {
	ctx, span, traceContext := e.startTrigger(ctx, def.Name(), o.Tenant, len(inputs), o.Tags)
	if span != nil {
		defer func() { e.endTrigger(span, refs, err) }()
	}
	runs, err := e.newRuns(ctx, def, inputs, keys, o, traceContext)
	if err != nil {
		return nil, err
	}
	if err := e.saveDefinition(ctx, def); err != nil {
		return nil, err
	}
	res, err := e.storeRuns(ctx, runs, o)
	if err != nil {
		return nil, fmt.Errorf("triggering %s: %w", def.Name(), err)
	}
	refs = make([]RunRef, len(res))
	for i, r := range res {
		refs[i] = RunRef{ID: r.ID, Workflow: def.Name(), Existing: !r.Created}
	}
	e.started(ctx, runs, res, o.Tenant)
	return refs, nil
}

// newRuns checks the options and validates every input of a trigger of
// def, and makes the runs to create: with their ids, priorities, tasks
// (with their limits' keys) and keys[i], when keys is not nil, as the
// idempotency key of inputs[i].
func (e *Engine) newRuns(ctx context.Context, def *Definition, inputs []json.RawMessage, keys []string, o RunOptions, traceContext string) ([]store.NewRun, error) {
	if err := e.checkRunOptions(def, o.Tenant, keys); err != nil {
		return nil, err
	}
	if err := CheckTags(o.Tags); err != nil {
		return nil, fmt.Errorf("triggering %s: %w", def.Name(), err)
	}
	inputs = slices.Clone(inputs)
	priorities := make([]int, len(inputs))
	tasks := newTasks(def)
	perRun := make([][]store.NewTask, len(inputs))
	var runLimits []store.RunLimit
	if def.runLimit != nil {
		runLimits = make([]store.RunLimit, len(inputs))
	}
	var debounces []store.Debounce
	if def.debounce != nil {
		debounces = make([]store.Debounce, len(inputs))
	}
	for i, in := range inputs {
		if len(in) == 0 {
			inputs[i] = json.RawMessage(`{}`)
		}
		err := e.cfg.SizeLimits.checkInput(inputs[i])
		if err == nil {
			err = def.ValidateInput(inputs[i])
		}
		if err == nil {
			priorities[i], err = o.Priority, nil
			if o.Priority == 0 {
				priorities[i], err = def.runPriority(ctx, inputs[i])
			}
		}
		if err == nil && def.hasLimits() {
			perRun[i] = slices.Clone(tasks)
			err = def.taskLimits(ctx, inputs[i], perRun[i])
		}
		if err == nil && runLimits != nil {
			runLimits[i], err = def.runLimitOf(ctx, inputs[i])
		}
		if err == nil && debounces != nil {
			debounces[i], err = def.debounceOf(ctx, inputs[i])
		}
		if err != nil {
			if len(inputs) > 1 {
				return nil, fmt.Errorf("input %d of %d: %w", i, len(inputs), err)
			}
			var le *LimitError
			if errors.As(err, &le) {
				return nil, fmt.Errorf("triggering %s: %w", def.Name(), err)
			}
			return nil, err
		}
	}
	runs := make([]store.NewRun, len(inputs))
	now := e.clock.Now()
	startAt := o.startAt(now)
	if !startAt.IsZero() && (def.runLimit != nil || def.debounce != nil) {
		return nil, fmt.Errorf("triggering %s: a run of a workflow with runConcurrency or debounce cannot be delayed yet (WithStartAt, WithStartAfter)", def.Name())
	}
	for i, in := range inputs {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("triggering %s: %w", def.Name(), err)
		}
		runs[i] = store.NewRun{
			ID: id, Workflow: def.Name(), Version: def.Version(), Tenant: o.Tenant, Priority: priorities[i],
			Input: in, Tasks: tasks, TraceContext: traceContext, Tags: o.Tags, Timeout: o.timeout(def.spec.Timeout), StartAt: startAt,
		}
		if perRun[i] != nil {
			runs[i].Tasks = perRun[i]
		}
		if runLimits != nil {
			runs[i].RunLimit = runLimits[i]
		}
		if debounces != nil {
			runs[i].Debounce = debounces[i]
		}
		if keys != nil {
			runs[i].IdempotencyKey = keys[i]
		}
	}
	return runs, nil
}

// storeRuns creates runs, of one workflow or several, in one store call:
// all of them, or none.
func (e *Engine) storeRuns(ctx context.Context, runs []store.NewRun, o RunOptions) (res []store.CreateRunResult, err error) {
	// Run ids are made here, so creating runs is idempotent by id: a retry
	// after a transient failure finds the runs an attempt that failed only
	// to answer created. In a caller's transaction, the caller decides.
	create := func() (res []store.CreateRunResult, err error) {
		return e.store.CreateRuns(ctx, store.CreateRuns{Runs: runs, Now: e.clock.Now(), Tx: o.Tx})
	}
	if o.Tx != nil {
		return create()
	}
	err = retryTransient(ctx, e.clock, func() (err error) { res, err = create(); return err })
	return res, err
}

// started wakes the claim loop for the runs created (res[i] says whether
// runs[i] was) and counts them, by workflow, with their tags.
func (e *Engine) started(ctx context.Context, runs []store.NewRun, res []store.CreateRunResult, tenant string) {
	created := map[string]int{}
	tags := map[string]map[string]string{} // a trigger gives its runs of a workflow one set of tags
	var names []string
	for i, r := range res {
		if !r.Created {
			continue
		}
		if created[runs[i].Workflow] == 0 {
			names = append(names, runs[i].Workflow)
			tags[runs[i].Workflow] = runs[i].Tags
		}
		created[runs[i].Workflow]++
	}
	if len(names) > 0 {
		e.wake()
	}
	if e.metrics != nil {
		if len(names) == 0 && len(runs) > 0 {
			names = append(names, runs[0].Workflow) // counted as before: zero
		}
		for _, name := range names {
			// In a caller's transaction, counted when created, not committed.
			e.metrics.RunsStarted(ctx, name, tenant, created[name], tags[name])
		}
	}
}

// checkRunOptions checks the tenant and the idempotency keys (keys[i]
// for input i, when keys is not nil) of a trigger of def against the
// engine's SizeLimits.
func (e *Engine) checkRunOptions(def *Definition, tenant string, keys []string) error {
	l := &e.cfg.SizeLimits
	if err := l.checkTenant(tenant); err != nil {
		return fmt.Errorf("triggering %s: %w", def.Name(), err)
	}
	for i, k := range keys {
		field := "idempotency key"
		if len(keys) > 1 {
			field = fmt.Sprintf("idempotency key of input %d", i)
		}
		if err := l.checkIdempotencyKey(field, k); err != nil {
			return fmt.Errorf("triggering %s: %w", def.Name(), err)
		}
	}
	return nil
}

// newTasks lists the tasks a run of def starts with.
func newTasks(def *Definition) []store.NewTask {
	pending, _ := dag.InitialPending(def.graph)
	tasks := make([]store.NewTask, len(def.graph.Steps))
	for i := range def.graph.Steps {
		s := &def.graph.Steps[i]
		tasks[i] = store.NewTask{Step: i, Kind: s.Kind, Parents: s.Parents, Pending: pending[i], Plain: s.Plain(), MaxAttempts: s.MaxAttempts(),
			Labels: def.labels(i)}
	}
	return tasks
}

// saveDefinition stores a definition version once per process.
func (e *Engine) saveDefinition(ctx context.Context, def *Definition) error {
	if e.registry.isSaved(def.Version()) {
		return nil
	}
	spec, err := json.Marshal(def.spec)
	if err != nil {
		return fmt.Errorf("encoding workflow %s: %w", def.Name(), err)
	}
	save := func() error {
		return e.store.SaveWorkflow(ctx, store.WorkflowVersion{Version: def.Version(), Name: def.Name(), Spec: spec, SavedAt: e.clock.Now()})
	}
	if err := retryTransient(ctx, e.clock, save); err != nil {
		return fmt.Errorf("saving workflow %s: %w", def.Name(), err)
	}
	e.registry.markSaved(def.Version())
	return nil
}

// Result returns the current state of a run with its outputs.
func (e *Engine) Result(ctx context.Context, id RunID) (*RunResult, error) {
	run, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, storeErr(err, id)
	}
	def, err := e.definition(ctx, run.Version)
	if err != nil {
		return nil, err
	}
	tasks, err := e.store.ListTasks(ctx, id)
	if err != nil {
		return nil, storeErr(err, id)
	}
	return resultOf(def, run, tasks), nil
}

// resultOf builds a run's result from what the store holds.
func resultOf(def *Definition, run store.Run, tasks []store.Task) *RunResult {
	res := &RunResult{
		ID: run.ID, Workflow: run.Workflow, Tenant: run.Tenant, Priority: run.Priority, Status: run.Status,
		Steps: make(map[string]TaskStatus, len(tasks)), Outputs: map[string]json.RawMessage{}, Parent: run.Parent,
		Tags: run.Tags, Waiting: run.Waiting, DebouncedUntil: run.DebouncedUntil,
	}
	for _, t := range tasks {
		if t.Key.Step >= len(def.graph.Steps) {
			continue
		}
		name := def.graph.Steps[t.Key.Step].Name
		res.Steps[name] = t.Status
		if t.Status == store.TaskCompleted && len(t.Output) > 0 {
			res.Outputs[name] = json.RawMessage(t.Output)
		}
	}
	if f := run.Failure; run.Status == store.RunFailed && f != nil && f.StepIndex >= 0 && f.StepIndex < len(def.graph.Steps) {
		f.Step = def.graph.Steps[f.StepIndex].Name
		res.Failure = f
	} else if run.Status == store.RunFailed && f != nil && f.StepIndex < 0 {
		res.Failure = f // its deadline passed: no step failed it
	}
	return res
}

func storeErr(err error, id RunID) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("run %s: %w", id, ErrRunNotFound)
	}
	return err
}

// CancelRun cancels a running run: its unfinished steps are cancelled and
// running steps see their context cancelled. It reports false when the run
// had already ended.
func (e *Engine) CancelRun(ctx context.Context, id RunID) (bool, error) {
	cancelled, err := e.CancelRuns(ctx, []RunID{id})
	if err != nil || len(cancelled) == 1 {
		return len(cancelled) == 1, err
	}
	return false, e.mustExist(ctx, id)
}

// CancelRuns cancels each running run of ids as CancelRun does, all in one
// transaction, and returns the runs it cancelled, in id order. Runs that
// had already ended and ids of no run are left out.
func (e *Engine) CancelRuns(ctx context.Context, ids []RunID) ([]RunID, error) {
	cancelled, err := e.store.CancelRuns(ctx, ids, e.clock.Now())
	if err != nil {
		return nil, err
	}
	out := make([]RunID, len(cancelled))
	for i, r := range cancelled {
		out[i] = r.ID
		e.exec.StopRun(r.ID)
		e.waiters.runFinished(r.ID)
		if e.metrics != nil {
			e.metrics.RunFinished(ctx, r.Workflow, r.Tenant, telemetry.OutcomeCancelled)
		}
	}
	return out, nil
}

// RetryRun gives a failed or cancelled run another go: the steps that
// failed or were cancelled run again (with a fresh retry budget), and
// completed steps keep their outputs. It returns ErrNotRetryable for a run
// that is running or completed.
func (e *Engine) RetryRun(ctx context.Context, id RunID) error {
	retried, err := e.RetryRuns(ctx, []RunID{id})
	if err != nil || len(retried) == 1 {
		return err
	}
	run, err := e.store.GetRun(ctx, id)
	if err != nil {
		return storeErr(err, id)
	}
	return fmt.Errorf("run %s is %s: %w", id, run.Status, ErrNotRetryable)
}

// RetryRuns retries each failed or cancelled run of ids as RetryRun does,
// reading them in one query and reopening them in one transaction, and
// returns the runs it retried, in id order. Runs that are running or
// completed and ids of no run are left out.
func (e *Engine) RetryRuns(ctx context.Context, ids []RunID) ([]RunID, error) {
	return e.reopen(ctx, ids, "")
}

// RerunRun runs step from of a finished run (completed, failed or
// cancelled) again, and every step below it: those steps run with the
// kept outputs of the steps above them, as new attempts of the same run
// (attempt numbers go on, each with a fresh retry budget), and the run is
// running again until they end. In a failed or cancelled run, the steps
// that did not complete run again too, as RetryRun runs them: a run only
// completes when every step has. The event log keeps what came before;
// each step queued again says "rerun from <from>". A waiter that already
// had the run's result gets the new one from the next Wait.
//
// It returns an error matching ErrNotRerunnable for a running run, and
// for a child run whose parent run is running (its step may still wait for
// it); ErrUnknownStep (with a guess at the step meant) for a step the run's
// workflow version does not have, and ErrRunNotFound for an unknown id.
func (e *Engine) RerunRun(ctx context.Context, id RunID, from string) error {
	reran, err := e.RerunRuns(ctx, []RunID{id}, from)
	if err != nil || len(reran) == 1 {
		return err
	}
	run, err := e.store.GetRun(ctx, id)
	if err != nil {
		return storeErr(err, id)
	}
	if !run.Status.Terminal() {
		return fmt.Errorf("run %s is %s: only a finished run can be rerun (wait for it to end, or cancel it): %w", id, run.Status, ErrNotRerunnable)
	}
	def, err := e.definition(ctx, run.Version)
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	if _, err := def.rerunFrom(from); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	if p := run.Parent; p != nil {
		if st, err := e.store.RunStatuses(ctx, []RunID{p.ID}); err == nil && st[p.ID] == store.RunRunning {
			return fmt.Errorf("run %s was started by run %s, which is still running: rerun it once that run has ended, or rerun that run from the step that started it: %w",
				id, p.ID, ErrNotRerunnable)
		}
	}
	return fmt.Errorf("run %s is %s: %w", id, run.Status, ErrNotRerunnable) // it was being reopened meanwhile
}

// RerunRuns reruns each finished run of ids from step from as RerunRun
// does, reading them in one query and reopening them in one transaction,
// and returns the runs it reopened, in id order. Running runs, runs whose
// workflow version has no step from, and ids of no run are left out.
func (e *Engine) RerunRuns(ctx context.Context, ids []RunID, from string) ([]RunID, error) {
	if from == "" {
		return nil, fmt.Errorf("rerun: no step given: %w", ErrUnknownStep)
	}
	return e.reopen(ctx, ids, from)
}

// reopen is retry (from empty) and rerun from a step: it reads the runs
// of ids, works out which of their tasks run again, and reopens them in
// one transaction.
func (e *Engine) reopen(ctx context.Context, ids []RunID, from string) ([]RunID, error) {
	runs, err := e.store.GetRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	waiting, err := e.parentsRunning(ctx, runs, from)
	if err != nil {
		return nil, err
	}
	p := store.RetryRuns{Now: e.clock.Now()}
	for _, r := range runs {
		rr := store.RetryRun{Run: r.ID, From: from}
		if !rr.Reopens(r.Status) || waiting[r.ID] {
			continue
		}
		def, err := e.definition(ctx, r.Version)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", r.ID, err)
		}
		var again []bool
		if from != "" {
			if again, err = def.rerunFrom(from); err != nil {
				continue // RerunRun says why
			}
		}
		rr.Reset = def.resets(r.Tasks, again)
		p.Runs = append(p.Runs, rr)
	}
	if len(p.Runs) == 0 {
		return nil, nil
	}
	reopened, err := e.store.RetryRuns(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(reopened) > 0 {
		e.wake()
	}
	return reopened, nil
}

// parentsRunning returns the runs of a rerun (from set) whose parent
// run is running: its step may still wait for its child runs, which a
// child run that ended twice would count twice, so such a run is not
// rerun. A retry leaves no such run: a child run that fails or is
// cancelled wakes its parent's step at once.
func (e *Engine) parentsRunning(ctx context.Context, runs []store.RunWithTasks, from string) (map[RunID]bool, error) {
	if from == "" {
		return nil, nil
	}
	var parents []RunID
	for _, r := range runs {
		if r.Parent != nil {
			parents = append(parents, r.Parent.ID)
		}
	}
	if len(parents) == 0 {
		return nil, nil
	}
	st, err := e.store.RunStatuses(ctx, parents)
	if err != nil {
		return nil, err
	}
	out := map[RunID]bool{}
	for _, r := range runs {
		if r.Parent != nil && st[r.Parent.ID] == store.RunRunning {
			out[r.ID] = true
		}
	}
	return out, nil
}

// rerunFrom returns the steps a rerun from step from runs again, by
// index: the step and its descendants. The failure handler is not a step
// to rerun from: it runs when a rerun fails.
func (d *Definition) rerunFrom(from string) ([]bool, error) {
	s, ok := d.graph.Step(from)
	if !ok || s.Kind == store.KindOnFailure {
		names := make([]string, 0, len(d.graph.Steps))
		for _, st := range d.graph.Steps {
			if st.Kind != store.KindOnFailure {
				names = append(names, st.Name)
			}
		}
		msg := fmt.Sprintf("workflow %s has no step %q to rerun from", d.spec.Name, from)
		if ok {
			msg = fmt.Sprintf("%q is the failure handler of workflow %s: it runs again when a rerun fails, and cannot be rerun from", from, d.spec.Name)
		} else if guess := suggest.Closest(from, names); guess != "" {
			msg += fmt.Sprintf("; did you mean %q?", guess)
		}
		return nil, &UnknownStepError{Workflow: d.spec.Name, Step: from, msg: msg}
	}
	return d.graph.Below(s.Index), nil
}

// resets returns the tasks a retry of a run whose tasks are these gives
// another go: every step that has not completed or been skipped, and
// every step again marks (a rerun's), each waiting for its parents that
// will not be resolved, and the failure handler once it ended.
func (d *Definition) resets(tasks []store.Task, again []bool) []store.ResetTask {
	status := make([]store.TaskStatus, len(d.graph.Steps))
	for _, t := range tasks {
		if t.Key.Step < len(status) {
			status[t.Key.Step] = t.Status
		}
	}
	for i := range again {
		if again[i] {
			status[i] = store.TaskPending
		}
	}
	var reset []store.ResetTask
	for i := range d.graph.Steps {
		s := &d.graph.Steps[i]
		if status[i].Resolved() && s.Kind != store.KindOnFailure {
			continue
		}
		if s.Kind == store.KindOnFailure && !status[i].Terminal() {
			continue
		}
		pending := 0
		for _, p := range s.Parents {
			if !status[p].Resolved() {
				pending++
			}
		}
		reset = append(reset, store.ResetTask{Step: i, Pending: pending})
	}
	return reset
}

// mustExist returns ErrRunNotFound for an id of no run, nil otherwise.
func (e *Engine) mustExist(ctx context.Context, id RunID) error {
	st, err := e.store.RunStatuses(ctx, []RunID{id})
	if err != nil {
		return err
	}
	if _, ok := st[id]; !ok {
		return fmt.Errorf("run %s: %w", id, ErrRunNotFound)
	}
	return nil
}

// Events returns a run's event log in the order it was written, with
// step names resolved from the run's workflow version and times in UTC:
// what trellis runs events and the dashboard show. An unknown id is an
// error matching ErrRunNotFound.
func (e *Engine) Events(ctx context.Context, id RunID) ([]Event, error) {
	run, err := e.store.GetRun(ctx, id)
	if err != nil {
		return nil, storeErr(err, id)
	}
	def, err := e.definition(ctx, run.Version)
	if err != nil {
		return nil, err
	}
	events, err := e.store.ListEvents(ctx, id)
	if err != nil {
		return nil, storeErr(err, id)
	}
	for i := range events {
		ev := &events[i]
		ev.Step = stepName(def, ev.StepIndex)
		ev.At = ev.At.UTC()
		if !ev.WakeAt.IsZero() {
			ev.WakeAt = ev.WakeAt.UTC()
		}
	}
	return events, nil
}

// stepName names step i of def, or "step i" when def is nil or has no
// step i.
func stepName(def *Definition, i int) string {
	if def != nil && i >= 0 && i < len(def.graph.Steps) {
		return def.graph.Steps[i].Name
	}
	return fmt.Sprintf("step %d", i)
}

// Event is one entry of a run's event log: the step, what happened to it
// (Type), in which attempt, when, and why (Detail). It is the store's
// record (store.Event), with Step named by Engine.Events.
type Event = store.Event
