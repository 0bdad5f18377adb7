package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/internal/executor"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
)

// planner is the engine's side of the executor (executor.Planner): what
// a claimed task means (skips, sleeps, maps, child runs, waits: plan),
// and its step's code (job.Run). It holds what planning and running a
// task need, and nothing of the engine's lifecycle.
type planner struct {
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	registry *registry
	defs     definitions
	limits   SizeLimits
	metrics  *telemetry.Metrics // nil without Config.MeterProvider
	tracer   *telemetry.Tracer  // nil without Config.TracerProvider
	// attemptLog is the executor's Executor.AttemptLog: set by New once
	// the executor, which is given the planner, exists.
	attemptLog func(store.Attempt) *slog.Logger
}

var (
	_ executor.Planner = (*planner)(nil)
	_ executor.Job     = (*job)(nil)
)

// definitions loads the definitions of stored versions and saves new
// ones, once per process: the engine's (engine.go, runs.go), which its
// API shares.
type definitions interface {
	definition(ctx context.Context, version string) (*Definition, error)
	saveDefinition(ctx context.Context, def *Definition) error
}

// Versions implements executor.Planner.
func (p *planner) Versions() []string { return p.registry.served() }

// Plan implements executor.Planner.
func (p *planner) Plan(ctx context.Context, claimed []store.ClaimedTask, claimedAt time.Time) ([]executor.Job, store.Results, error) {
	return p.plan(ctx, claimed, claimedAt)
}

// StepName implements executor.Planner.
func (p *planner) StepName(version string, step int) (string, bool) {
	return p.registry.stepName(version, step)
}

// taskLog returns the engine's logger with a step attempt's attributes.
func (p *planner) taskLog(info StepInfo) *slog.Logger {
	return info.attempt().Logger(p.log)
}

// job is a claimed task whose code is to run (an executor.Job).
type job struct {
	p       *planner
	claim   store.ClaimedTask
	def     *Definition
	step    *dag.Step
	parents map[string]json.RawMessage // outputs of completed parents
	// planned is when the job was planned: its result is stamped no
	// earlier, whatever the wall clock does meanwhile.
	planned time.Time
}

// plan looks at claimed tasks and sorts them into jobs whose code must run
// and results known at once (skips, sleeps, woken sleeps, tasks that cannot
// run). It writes the STARTED events of jobs the claim did not start.
// claimedAt is the time the claim was stamped with.
func (p *planner) plan(ctx context.Context, claimed []store.ClaimedTask, claimedAt time.Time) ([]executor.Job, store.Results, error) {
	now := p.clock.Now()
	results := store.Results{Now: now}
	var jobs []executor.Job // each a *job
	var start []store.Attempt
	m := p.metrics
	for _, c := range claimed {
		a := executor.AttemptOf(c)
		if c.Refused != "" {
			// Quarantined: its data made the store's claim fail.
			p.attemptLog(a).Error("failing a task the store could not claim", "reason", c.Refused)
			results.Failures = append(results.Failures, store.Failure{Attempt: a, Error: c.Refused})
			m.Quarantine(ctx, c.Workflow, c.Tenant)
			m.TaskEnded(ctx, c.Workflow, fmt.Sprintf("step %d", c.Key.Step), c.Tenant, telemetry.OutcomeFailed)
			continue
		}
		def, err := p.defs.definition(ctx, c.Version)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				return nil, store.Results{}, err // transient: the claims will be recovered
			}
			results.Failures = append(results.Failures, store.Failure{Attempt: a, Error: err.Error()})
			m.TaskEnded(ctx, c.Workflow, fmt.Sprintf("step %d", c.Key.Step), c.Tenant, telemetry.OutcomeFailed)
			continue
		}
		if c.Key.Step >= len(def.graph.Steps) {
			results.Failures = append(results.Failures, store.Failure{Attempt: a,
				Error: fmt.Sprintf("workflow %s has no step %d", def.Version(), c.Key.Step)})
			m.TaskEnded(ctx, c.Workflow, fmt.Sprintf("step %d", c.Key.Step), c.Tenant, telemetry.OutcomeFailed)
			continue
		}
		step := &def.graph.Steps[c.Key.Step]
		m.QueueWait(ctx, c.Workflow, step.Name, c.Tenant, c.QueuedAt, claimedAt)
		switch {
		case c.Woken && (step.Kind == store.KindMap || step.Kind == store.KindChild || step.Kind == store.KindWait):
			var res store.Results
			switch step.Kind {
			case store.KindMap:
				res, err = p.collectItems(ctx, c, def, step)
			case store.KindChild:
				res, err = p.collectChild(ctx, c, def, step, now)
			default:
				res, err = p.collectWait(ctx, c, def, step)
			}
			if err != nil {
				return nil, store.Results{}, err // transient: the claims will be recovered
			}
			executor.Merge(&results, res)
			m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, outcomeOf(res))
			continue
		case c.Woken:
			results.Completions = append(results.Completions, store.Completion{Attempt: a, Woken: true, Children: step.Children})
			m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, telemetry.OutcomeCompleted)
			continue
		case step.Kind == store.KindOnFailure:
			jobs = append(jobs, &job{p: p, claim: c, def: def, step: step, planned: now})
			if !c.Plain {
				start = append(start, a)
			}
			continue
		}
		completed, statuses := parentState(c, def)
		if dag.CascadeSkip(statuses) {
			results.Completions = append(results.Completions, store.Completion{Attempt: a, Skipped: true,
				Detail: "all parents were skipped", Children: step.Children})
			m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, telemetry.OutcomeSkipped)
			continue
		}
		skip, detail, err := p.evalSkip(ctx, def, step, c.Input, completed)
		switch {
		case err != nil:
			results.Failures = append(results.Failures, store.Failure{Attempt: a, Error: err.Error()})
			m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, telemetry.OutcomeFailed)
			continue
		case skip:
			results.Completions = append(results.Completions, store.Completion{Attempt: a, Skipped: true,
				Detail: detail, Children: step.Children})
			m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, telemetry.OutcomeSkipped)
			continue
		case step.Kind == store.KindSleep:
			results.Sleeps = append(results.Sleeps, store.Sleep{Attempt: a, For: step.Sleep})
			continue
		case step.Kind == store.KindMap || step.Kind == store.KindChild && def.childFields(step.Index) != nil:
			var sp store.Spawn
			if step.Kind == store.KindMap {
				sp, err = p.spawnItems(ctx, c, def, step, completed)
			} else {
				var input json.RawMessage
				if input, err = def.childInput(ctx, step, c.Input, completed); err == nil {
					sp, err = p.spawnChild(ctx, c, def, step, input, now)
				}
			}
			switch {
			case errors.Is(err, store.ErrTransient) || ctx.Err() != nil:
				return nil, store.Results{}, err // the claims will be recovered
			case err != nil:
				results.Failures = append(results.Failures, store.Failure{Attempt: a, Error: err.Error()})
				m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, telemetry.OutcomeFailed)
			default:
				results.Spawns = append(results.Spawns, sp)
			}
			continue
		case step.Kind == store.KindWait:
			aw, err := p.await(ctx, c, def, step, now)
			if err != nil {
				results.Failures = append(results.Failures, store.Failure{Attempt: a, Error: err.Error()})
				m.TaskEnded(ctx, c.Workflow, step.Name, c.Tenant, telemetry.OutcomeFailed)
				continue
			}
			results.Awaits = append(results.Awaits, aw)
			continue
		}
		jobs = append(jobs, &job{p: p, claim: c, def: def, step: step, parents: completed, planned: now})
		if !c.Plain {
			start = append(start, a)
		}
	}
	if len(start) > 0 {
		err := p.store.StartTasks(ctx, start, now)
		if errors.Is(err, store.ErrInvalidData) {
			// One task's data made the batch fail: start them one by one,
			// failing those the store refuses, which hold up no other.
			var refused map[store.Attempt]error
			refused, err = p.startEach(ctx, start, now)
			jobs = slices.DeleteFunc(jobs, func(ej executor.Job) bool {
				j := ej.(*job)
				cause, bad := refused[executor.AttemptOf(j.claim)]
				if bad {
					p.attemptLog(executor.AttemptOf(j.claim)).Error("the store refused a task's start; failing the task", "error", cause)
					results.Failures = append(results.Failures, store.Failure{Attempt: executor.AttemptOf(j.claim),
						Error: "the store refused to record the task's start: " + executor.CleanText(cause.Error())})
					m.Quarantine(ctx, j.claim.Workflow, j.claim.Tenant)
					m.TaskEnded(ctx, j.claim.Workflow, j.step.Name, j.claim.Tenant, telemetry.OutcomeFailed)
				}
				return bad
			})
		}
		if err != nil {
			return nil, store.Results{}, err
		}
	}
	return jobs, results, nil
}

// startEach records the starts of tasks one by one, and returns those
// the store refused, with why.
func (p *planner) startEach(ctx context.Context, start []store.Attempt, now time.Time) (map[store.Attempt]error, error) {
	refused := map[store.Attempt]error{}
	for _, a := range start {
		err := p.store.StartTasks(ctx, []store.Attempt{a}, now)
		switch {
		case errors.Is(err, store.ErrInvalidData):
			refused[a] = err
		case err != nil:
			return nil, err
		}
	}
	return refused, nil
}

// parentState returns the outputs of a claimed task's completed parents by
// name, and every parent's status.
func parentState(c store.ClaimedTask, def *Definition) (map[string]json.RawMessage, []store.TaskStatus) {
	completed := make(map[string]json.RawMessage, len(c.Parents))
	statuses := make([]store.TaskStatus, 0, len(c.Parents))
	for _, p := range c.Parents {
		statuses = append(statuses, p.Status)
		if p.Status == store.TaskCompleted && p.Step < len(def.graph.Steps) {
			completed[def.graph.Steps[p.Step].Name] = json.RawMessage(p.Output)
		}
	}
	return completed, statuses
}

// evalSkip evaluates a step's skipIf conditions; any true one skips it.
func (p *planner) evalSkip(ctx context.Context, def *Definition, step *dag.Step, input []byte, parents map[string]json.RawMessage) (bool, string, error) {
	env, progs := def.conditions(step.Index)
	if len(progs) == 0 {
		return false, "", nil
	}
	vars, err := env.Bind(input, parents)
	if err != nil {
		return false, "", fmt.Errorf("skipIf of step %s: %w", step.Name, err)
	}
	for _, prg := range progs {
		skip, err := prg.Eval(ctx, vars)
		if err != nil {
			return false, "", fmt.Errorf("skipIf of step %s: %w", step.Name, err)
		}
		if skip {
			return true, fmt.Sprintf("skipIf %q is true", prg.Source()), nil
		}
	}
	return false, "", nil
}

// Task implements executor.Job.
func (j *job) Task() store.ClaimedTask { return j.claim }

// FailureHandler implements executor.Job.
func (j *job) FailureHandler() bool { return j.step.Kind == store.KindOnFailure }

// Run implements executor.Job: it runs the job's code in stepCtx and
// turns what it returned into a result. ok is false when the result must
// be dropped: the run ended, the task was taken over, or the engine gave
// up waiting for it on shutdown.
func (j *job) Run(ctx, stepCtx context.Context) (res store.Results, ok bool) {
	p, c := j.p, j.claim
	info := StepInfo{RunID: c.Key.Run, Workflow: c.Workflow, Tenant: c.Tenant, Step: j.step.Name,
		Attempt: c.Attempt, Retries: c.Attempt - c.PriorAttempts - 1}
	runCtx := withInfo(stepCtx, info)
	runCtx, span := p.tracer.StartStep(runCtx, c.TraceContext, info.attempt())
	if j.step.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = clock.WithTimeout(runCtx, p.clock, j.step.Timeout)
		defer stop()
	}
	var began time.Time
	if p.metrics != nil {
		p.metrics.StepStarted(ctx, info.attempt())
		began = p.clock.Now()
	}
	out, err := p.call(runCtx, j, info)
	a := executor.AttemptOf(c)
	if cause := context.Cause(stepCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		p.taskLog(info).Info("dropping step result", "reason", cause)
		span.End(telemetry.OutcomeDropped, cause, p.clock.Now())
		return store.Results{}, false
	}
	now := p.clock.Now()
	if now.Before(j.planned) {
		now = j.planned
	}
	res.Now = now
	// ended reports the attempt's outcome to the span and the metrics.
	ended := func(outcome string, err error) {
		span.End(outcome, err, now)
		if p.metrics != nil {
			p.metrics.StepRan(ctx, info.attempt(), now.Sub(began), outcome)
		}
	}
	if err == nil {
		switch {
		case len(out) > 0 && !utf8.Valid(out):
			err = NonRetryable(errors.New("step returned output that is not valid UTF-8"))
		case len(out) > 0 && !json.Valid(out):
			err = NonRetryable(errors.New("step returned invalid JSON"))
		default:
			if j.step.Kind == store.KindChild {
				// The code built the child's input: start the child run.
				sp, serr := p.spawnChild(ctx, c, j.def, j.step, out, now)
				if serr == nil {
					res.Spawns = []store.Spawn{sp}
					ended(telemetry.OutcomeCompleted, nil)
					return res, true
				}
				err = serr
				break
			}
			if lerr := p.limits.checkOutput(j.step.Name, out); lerr != nil {
				err = NonRetryable(lerr)
				break
			}
			if verr := j.def.validateOutput(j.step.Index, out); verr != nil {
				err = NonRetryable(verr)
				break
			}
			res.Completions = []store.Completion{{Attempt: a, Output: out, Children: j.step.Children}}
			ended(telemetry.OutcomeCompleted, nil)
			return res, true
		}
	}
	timedOut := runCtx.Err() != nil && errors.Is(context.Cause(runCtx), context.DeadlineExceeded)
	msg := p.limits.clipError(executor.CleanText(err.Error()))
	if timedOut {
		msg = fmt.Sprintf("timed out after %v: %s", j.step.Timeout, msg)
	}
	if delay, retry := dag.Retry(j.step.Retry, info.Retries+1, IsRetryable(err)); retry {
		p.taskLog(info).Info("step failed; will retry", "error", msg, "in", delay)
		res.Retries = []store.Retry{{Attempt: a, Error: msg, TimedOut: timedOut, At: now.Add(delay)}}
		ended(telemetry.OutcomeRetried, err)
		return res, true
	}
	p.taskLog(info).Info("step failed", "error", msg)
	res.Failures = []store.Failure{{Attempt: a, Error: msg, TimedOut: timedOut}}
	ended(telemetry.OutcomeFailed, err)
	return res, true
}

// call invokes the job's code, turning a panic into an error.
func (p *planner) call(ctx context.Context, j *job, info StepInfo) (out json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.taskLog(info).Error("step panicked", "panic", v, "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("step panicked: %v", v)
		}
	}()
	h, ok := p.registry.handlers(j.claim.Version)
	if j.step.Kind == store.KindOnFailure {
		if !ok || h.OnFailure == nil {
			return nil, NonRetryable(fmt.Errorf("no code registered for failure handler %s of %s", j.step.Name, j.claim.Version))
		}
		failed := ""
		if f := j.claim.FailedStep; f >= 0 && f < len(j.def.graph.Steps) {
			failed = j.def.graph.Steps[f].Name
		}
		return nil, h.OnFailure(ctx, &FailureRequest{Info: info, Input: j.claim.Input,
			Failure: Failure{StepIndex: j.claim.FailedStep, Step: failed, Error: j.claim.Error}})
	}
	fn := h.Steps[j.step.Name]
	if fn == nil {
		return nil, NonRetryable(fmt.Errorf("no code registered for step %s of %s", j.step.Name, j.claim.Version))
	}
	return fn(ctx, &StepRequest{Info: info, Input: j.claim.Input, Parents: j.parents})
}

// outcomeOf is the outcome a batch of one task's results reports.
func outcomeOf(r store.Results) string {
	switch {
	case len(r.Failures) > 0:
		return telemetry.OutcomeFailed
	case len(r.Retries) > 0:
		return telemetry.OutcomeRetried
	case len(r.Completions) > 0 && r.Completions[0].Skipped:
		return telemetry.OutcomeSkipped
	}
	return telemetry.OutcomeCompleted
}
