package runtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// pipeline is the one path every task takes through an engine: claimed,
// planned, executed, recorded. A started engine runs it from its loops
// (lifecycle.go); a Driver runs it by hand (driver.go). Both record
// results through record, so tests exercise the production path,
// refused-data fallback included.
//
// Each claimed task holds a slot from its claim until its result is with
// the recorder, so that the tasks an engine holds stay bounded when
// recording falls behind.
type pipeline struct {
	e       *Engine
	slots   chan struct{}      // one token per task claimed and not yet handed over
	results chan store.Results // from steps and the planner to the recorder
	steps   sync.WaitGroup     // running steps
	running atomic.Int64       // steps whose result is not yet in results
	// inCode counts the steps whose code has not returned: when none has,
	// no result is about to come, and the recorder need not wait for
	// one (running, and the slots, count a step until its result is
	// handed over, which comes after).
	inCode atomic.Int64
	// stepEnded is signalled when a step stops running, with a result or
	// without one (dropped: its run ended, or its task was lost).
	stepEnded chan struct{}
	// stepCtx is the parent of every step's context; stepCancel ends them
	// all (Stop, past its deadline).
	stepCtx    context.Context
	stepCancel context.CancelCauseFunc
	// abandon is closed when nobody will record results any more: a step
	// that ends after that keeps its task owned, for Stop to hand back.
	abandon chan struct{}
	// timerSet is signalled when a recorded batch set a durable timer, so
	// that the leader recomputes its wait.
	timerSet chan struct{}
}

func newPipeline(e *Engine, parent context.Context) *pipeline {
	stepCtx, stepCancel := context.WithCancelCause(context.WithoutCancel(parent))
	return &pipeline{
		e:          e,
		slots:      make(chan struct{}, e.cfg.Concurrency),
		results:    make(chan store.Results, 2*e.cfg.Concurrency),
		stepCtx:    stepCtx,
		stepCancel: stepCancel,
		abandon:    make(chan struct{}),
		timerSet:   make(chan struct{}, 1),
		stepEnded:  make(chan struct{}, 1),
	}
}

// takeSlots takes up to n free slots without waiting and returns how many
// it took.
func (p *pipeline) takeSlots(n int) int {
	took := 0
	for took < n {
		select {
		case p.slots <- struct{}{}:
			took++
		default:
			return took
		}
	}
	return took
}

func (p *pipeline) releaseSlots(n int) {
	for range n {
		<-p.slots
	}
}

// claimAndRun claims up to free tasks (whose slots the caller holds),
// hands their immediate results (skips, sleeps, wake-ups) to the recorder
// and starts their steps; slots not used by a step are released.
func (p *pipeline) claimAndRun(ctx context.Context, free int) (int, error) {
	e := p.e
	names := e.workflowNames()
	if len(names) == 0 {
		// Without code for any workflow there is nothing to claim: this
		// engine only triggers runs.
		p.releaseSlots(free)
		return 0, nil
	}
	claimed, claimedAt, err := e.claim(ctx, names, free)
	if err != nil {
		p.releaseSlots(free)
		return 0, err
	}
	jobs, immediate, err := e.plan(ctx, claimed, claimedAt)
	if err != nil {
		e.handBack(ctx, attemptsOf(claimed), "the worker could not start the task: "+cleanText(err.Error()), false)
		p.releaseSlots(free)
		return len(claimed), err
	}
	p.releaseSlots(free - len(jobs))
	if immediate.Len() > 0 {
		p.results <- immediate
	}
	p.running.Add(int64(len(jobs)))
	p.inCode.Add(int64(len(jobs)))
	for _, j := range jobs {
		p.steps.Add(1)
		go func() {
			// In this order: a step no longer counts as running once its
			// result is handed over and its slot is free.
			defer func() {
				<-p.slots
				p.running.Add(-1)
				select {
				case p.stepEnded <- struct{}{}:
				default:
				}
				p.steps.Done()
			}()
			res, ok := e.execute(p.stepCtx, j)
			p.inCode.Add(-1)
			if !ok {
				return
			}
			select {
			case <-p.abandon:
			case p.results <- res:
			}
		}()
	}
	return len(claimed), nil
}

// claim claims up to limit ready tasks of the named workflows and owns
// them, and returns the time the claim was stamped with. While the claim
// is under way, reconciliation leaves its tasks be.
func (e *Engine) claim(ctx context.Context, workflows []string, limit int) ([]store.ClaimedTask, time.Time, error) {
	now := e.clock.Now()
	token := e.claims.begin(now)
	claimed, err := e.store.ClaimTasks(ctx, store.Claim{
		Worker: e.cfg.WorkerID, Workflows: workflows, Limit: limit,
		TenantLimit: e.cfg.TenantConcurrency, Now: now,
	})
	e.claims.end(token, claimed)
	if e.metrics != nil && err == nil {
		e.metrics.claimed(ctx, e.clock.Now().Sub(now), len(claimed))
	}
	return claimed, now, err
}

func attemptsOf(tasks []store.ClaimedTask) []store.Attempt {
	out := make([]store.Attempt, len(tasks))
	for i, t := range tasks {
		out[i] = attemptOf(t)
	}
	return out
}

// drain adds the results waiting in the pipeline to batch, up to max.
func (p *pipeline) drain(batch *store.Results, max int) {
	for batch.Len() < max {
		select {
		case r := <-p.results:
			merge(batch, r)
		default:
			return
		}
	}
}

// record records a batch, retrying while the store fails: a result is
// never dropped while ctx lasts (its tasks stay owned and heartbeated
// meanwhile, and Stop hands back what could not be recorded). When the
// store refuses the data itself, retrying cannot help: the results are
// recorded one by one, and one the store refuses becomes a failure of its
// task.
func (p *pipeline) record(ctx context.Context, batch store.Results) {
	e := p.e
	backoff := 100 * time.Millisecond
	for {
		res, err := e.store.Finish(ctx, batch)
		if err == nil {
			e.faults.ok("recording task results", e.clock.Now())
			e.afterFinish(batch, res)
			if len(batch.Retries) > 0 || len(batch.Sleeps) > 0 || len(batch.Awaits) > 0 || len(batch.Spawns) > 0 {
				select {
				case p.timerSet <- struct{}{}:
				default:
				}
			}
			return
		}
		if errors.Is(err, store.ErrInvalidData) {
			p.recordRefused(ctx, batch, err)
			return
		}
		if ctx.Err() != nil {
			return
		}
		e.faults.failed("recording task results", err, e.clock.Now())
		t := e.clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// recordRefused records a batch the store refused: result by result, so
// that one bad result does not hold up the others, turning a refused
// result into a failure of its task (and handing the task back, should
// even that be refused).
func (p *pipeline) recordRefused(ctx context.Context, batch store.Results, cause error) {
	e := p.e
	if batch.Len() > 1 {
		for _, one := range split(batch) {
			p.record(ctx, one)
		}
		return
	}
	a := attempts(batch)[0]
	if len(batch.Failures) == 1 && strings.HasPrefix(batch.Failures[0].Error, refusedPrefix) {
		e.attemptLog(a).Error("the store refused a task's failure too; handing the task back", "error", cause)
		e.handBack(ctx, []store.Attempt{a}, "the store refused the task's result", false)
		return
	}
	e.attemptLog(a).Error("the store refused a task result; failing the task", "error", cause)
	p.record(ctx, store.Results{Now: batch.Now, Failures: []store.Failure{{Attempt: a, Error: refusedPrefix + cleanText(cause.Error())}}})
}

const refusedPrefix = "the store refused this task's result: "

// split breaks a batch into batches of one result each.
func split(batch store.Results) []store.Results {
	var out []store.Results
	for _, c := range batch.Completions {
		out = append(out, store.Results{Now: batch.Now, Completions: []store.Completion{c}})
	}
	for _, r := range batch.Retries {
		out = append(out, store.Results{Now: batch.Now, Retries: []store.Retry{r}})
	}
	for _, f := range batch.Failures {
		out = append(out, store.Results{Now: batch.Now, Failures: []store.Failure{f}})
	}
	for _, s := range batch.Sleeps {
		out = append(out, store.Results{Now: batch.Now, Sleeps: []store.Sleep{s}})
	}
	for _, s := range batch.Spawns {
		out = append(out, store.Results{Now: batch.Now, Spawns: []store.Spawn{s}})
	}
	for _, a := range batch.Awaits {
		out = append(out, store.Results{Now: batch.Now, Awaits: []store.Await{a}})
	}
	return out
}

// countFinishedRuns counts the runs a recorded batch ended: failed when
// the batch failed one of their tasks, completed otherwise.
func (e *Engine) countFinishedRuns(batch store.Results, finished []RunID) {
	failed := map[RunID]bool{}
	for _, f := range batch.Failures {
		failed[f.Key.Run] = true
	}
	owners := map[RunID]claim{}
	for _, a := range attempts(batch) {
		if _, ok := owners[a.Key.Run]; !ok {
			if cl, ok := e.claims.about(a); ok {
				owners[a.Key.Run] = cl
			}
		}
	}
	ctx := context.Background()
	for _, id := range finished {
		cl, ok := owners[id]
		if !ok {
			continue
		}
		outcome := outcomeCompleted
		if failed[id] {
			outcome = outcomeFailed
		}
		e.metrics.runFinished.Add(ctx, 1, e.metrics.runAttrs(cl.workflow, cl.tenant, outcome))
	}
}

// afterFinish wakes whoever waits on what a Finish changed.
func (e *Engine) afterFinish(batch store.Results, res store.FinishResult) {
	if e.metrics != nil && len(res.Finished) > 0 {
		e.countFinishedRuns(batch, res.Finished) // while the claims still say whose tasks these were
	}
	e.claims.release(attempts(batch)...)
	for _, id := range res.Finished {
		e.claims.stopRun(id, errRunEnded)
		e.runFinished(id)
	}
	if len(batch.Completions) > 0 || len(res.Finished) > 0 {
		e.wake() // children (or a failure handler) may be queued
	}
}
