package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
)

// pipeline is the one path every task takes through an engine: claimed,
// planned, executed, recorded. A started engine runs it from its loops
// (loops.go); a Driver runs it by hand (hand.go). Both record
// results through record, so tests exercise the production path,
// refused-data fallback included.
//
// A slot bounds the code running at once: a claimed task takes one, and
// gives it back when its step's code returns, while its result goes on
// to be recorded (a result known without running code, such as a skip or
// a sleep, frees its slot at once). What waits to be recorded is bounded
// apart: a step that returns takes a place among the unrecorded results
// (pending, twice Concurrency of them) before it frees its slot, and
// keeps the slot while none is free, so that when recording falls behind
// the slots fill and claims stop.
//
// A recorded completion may take the children it makes ready from the
// store straight to this engine (store.HandOff), which then run without
// going through the queue: a child never starts before the statement
// that records its parent returns. Its parent's slot was freed when its
// code returned, so the children wait (owned, their STARTED written, no
// code running) for slots: those free when the statement returns, then
// those that free after, which the claim loop gives them ahead of claims.
// The statement takes as many as there is room for among the tasks
// waiting (see handOffRoom); one that waits handOffWait goes back to the
// queue, where any worker may take it.
//
// So an engine owns at most Concurrency tasks whose code runs (or whose
// step waits for a place), twice that many unrecorded results, and six
// times that many tasks handed off waiting for a slot (see waitRoom).
type pipeline struct {
	x       *Executor
	slots   chan struct{}  // one token per task claimed whose code has not returned
	pending chan struct{}  // one token per step result not yet recorded
	results chan outcome   // from steps and the planner to the recorder
	steps   sync.WaitGroup // running steps
	running atomic.Int64   // steps whose result is not yet in results
	// inCode counts the steps whose code has not returned: when none has,
	// no result is about to come, and the recorder need not wait for
	// one (running counts a step until its result is handed over, which
	// comes after).
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
	// idle passes a step to a step goroutine waiting for its next one
	// (spawn); stepIdle is how long one waits before it exits (0: it
	// exits at once).
	idle     chan func()
	stepIdle time.Duration
	// startMu orders starting steps with stop: once stopped, tasks that
	// reach this engine (a claim in flight, a hand-off) go back to the
	// queue unstarted, and steps is never added to while Stop waits on it.
	startMu sync.Mutex
	stopped bool
	// waiting holds the tasks handed off that wait for a slot, oldest
	// first, each with the time it was handed off; reserved is the room
	// among them that recordings in flight took for their children.
	waitMu   sync.Mutex
	waiting  []handedOff
	reserved int
	// nWaiting is len(waiting), read without the lock by a step that
	// frees its slot and by the claim loop; parked tells the claim loop
	// that tasks were added (see gatherSlots).
	nWaiting atomic.Int64
	parked   chan struct{}
	// freed tells the claim loop that slots freed (see gatherSlots).
	freed chan struct{}
}

// handedOff is a task handed off to this engine and when.
type handedOff struct {
	task store.ClaimedTask
	at   time.Time
}

// handOffWait is how long a task handed off that found no free slot
// waits for one before it goes back to the queue: long enough for a slot
// to free where steps are short (a few milliseconds), short enough that
// where all slots hold long steps another worker soon runs it.
const handOffWait = time.Second

// stop makes the pipeline start no more steps.
func (p *pipeline) stop() {
	p.startMu.Lock()
	defer p.startMu.Unlock()
	p.stopped = true
}

func newPipeline(x *Executor, parent context.Context) *pipeline {
	stepCtx, stepCancel := context.WithCancelCause(context.WithoutCancel(parent))
	return &pipeline{
		x:          x,
		slots:      make(chan struct{}, x.cfg.Concurrency),
		pending:    make(chan struct{}, unrecorded(x.cfg.Concurrency)),
		results:    make(chan outcome, 2*x.cfg.Concurrency),
		idle:       make(chan func()),
		stepCtx:    stepCtx,
		stepCancel: stepCancel,
		abandon:    make(chan struct{}),
		stepEnded:  make(chan struct{}, 1),
		parked:     make(chan struct{}, 1),
		freed:      make(chan struct{}, 1),
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
	if n == 0 {
		return
	}
	for range n {
		<-p.slots
	}
	p.signalFreed()
}

// signalFreed tells the claim loop, should it wait for slots to free
// (gatherSlots), that some did.
func (p *pipeline) signalFreed() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// unrecorded is how many step results may wait to be recorded at once:
// twice Concurrency, so that while one batch is recorded the next one
// gathers as many results again as there are slots.
func unrecorded(concurrency int) int { return 2 * concurrency }

func (p *pipeline) releasePending(n int) {
	for range n {
		<-p.pending
	}
}

// outcome is results on their way to the recorder, with the places
// among the unrecorded results that the steps they came from took
// (pending), given back once they are recorded.
type outcome struct {
	store.Results
	pending int
}

// add merges o's results and places into b.
func (b *outcome) add(o outcome) {
	Merge(&b.Results, o.Results)
	b.pending += o.pending
}

// claimAndRun fills free slots (which the caller holds): first with
// tasks handed off to this engine that wait for a slot (see pipeline),
// then with up to as many claimed tasks, unless few slots are left. It
// hands their immediate results (skips, sleeps, wake-ups) to the recorder
// and starts their steps; slots not used by a step are released. It
// returns how many waiting tasks it started and how many it claimed.
func (p *pipeline) claimAndRun(ctx context.Context, free int) (started, claimed int, err error) {
	x := p.x
	started, immediate := p.startWaiting(ctx, free)
	defer func() {
		if immediate.Len() > 0 {
			p.results <- outcome{Results: immediate}
		}
	}()
	if free -= started; free == 0 {
		return started, 0, nil
	}
	if started > 0 && free < x.cfg.ClaimBatch/2 {
		// The slots left after the waiting tasks make a small claim; they
		// are taken again, with those that free meanwhile, at once.
		p.releaseSlots(free)
		return started, 0, nil
	}
	versions := x.cfg.Planner.Versions()
	if len(versions) == 0 {
		// Without code for any workflow there is nothing to claim: this
		// engine only triggers runs.
		p.releaseSlots(free)
		return started, 0, nil
	}
	tasks, claimedAt, err := x.claim(ctx, versions, free)
	if err != nil {
		p.releaseSlots(free)
		return started, 0, err
	}
	res, err := p.run(ctx, tasks, claimedAt, free)
	Merge(&immediate, res)
	return started, len(tasks), err
}

// run plans tasks this engine now owns, claimed (or handed off) at, and
// starts their steps. The caller holds slots for them (free, at least
// one per task); those not used by a step are released. It returns the
// results known without running code, which the caller passes on to be
// recorded.
func (p *pipeline) run(ctx context.Context, tasks []store.ClaimedTask, at time.Time, free int) (store.Results, error) {
	x := p.x
	p.startMu.Lock()
	defer p.startMu.Unlock()
	if p.stopped {
		x.handBack(ctx, attemptsOf(tasks), fmt.Sprintf("worker %s is stopping", x.cfg.Worker), false)
		p.releaseSlots(free)
		return store.Results{}, nil
	}
	jobs, immediate, err := x.cfg.Planner.Plan(ctx, tasks, at)
	if err != nil {
		x.handBack(ctx, attemptsOf(tasks), "the worker could not start the task: "+CleanText(err.Error()), false)
		p.releaseSlots(free)
		return store.Results{}, err
	}
	p.releaseSlots(free - len(jobs))
	p.running.Add(int64(len(jobs)))
	p.inCode.Add(int64(len(jobs)))
	for _, j := range jobs {
		p.steps.Add(1)
		p.spawn(func() {
			// In this order: a step no longer counts as running once its
			// result is handed over or dropped.
			defer func() {
				p.running.Add(-1)
				select {
				case p.stepEnded <- struct{}{}:
				default:
				}
				p.steps.Done()
			}()
			res, ok := x.execute(p.stepCtx, j)
			p.inCode.Add(-1)
			if !ok {
				p.freeSlot()
				return
			}
			// A place among the unrecorded results before the slot: when
			// recording falls behind, the slots fill and claims stop.
			select {
			case <-p.abandon:
				p.freeSlot()
				return
			case p.pending <- struct{}{}:
			}
			p.freeSlot()
			select {
			case <-p.abandon:
				p.releasePending(1)
			case p.results <- outcome{Results: res, pending: 1}:
			}
		})
	}
	return immediate, nil
}

// freeSlot gives back the slot of a step whose code returned. The claim
// loop (or a Driver) takes it and starts the tasks handed off that wait
// for one before it claims more: the children of recorded completions go
// on ahead of claims, several at a time.
func (p *pipeline) freeSlot() {
	<-p.slots
	p.signalFreed()
	if p.nWaiting.Load() > 0 {
		p.x.Wake() // the claim loop may be waiting for the poll interval
	}
}

// spawn runs step on a goroutine of its own: an idle step goroutine if one
// is waiting, else a new one. A step goroutine waits a while for the next
// step when one ends, so that a busy engine's steps run on goroutines
// whose stacks have already grown to what steps need: a fresh goroutine
// per step grows (copies) its stack several times, which cost a tenth of
// a worker's CPU with no-op steps. A Driver's steps (stepIdle 0) each
// run on a goroutine of their own, which ends with it.
func (p *pipeline) spawn(step func()) {
	select {
	case p.idle <- step:
	default:
		go p.stepLoop(step)
	}
}

func (p *pipeline) stepLoop(step func()) {
	if p.stepIdle == 0 {
		step()
		return
	}
	idle := time.NewTimer(p.stepIdle)
	defer idle.Stop()
	for {
		step()
		step = nil // holds nothing of the step while it waits
		idle.Reset(p.stepIdle)
		select {
		case step = <-p.idle:
		case <-idle.C:
			return
		case <-p.stepCtx.Done():
			return
		}
	}
}

// claim claims up to limit ready tasks of the given workflow versions and
// owns them, and returns the time the claim was stamped with. While the claim
// is under way, reconciliation leaves its tasks be.
func (x *Executor) claim(ctx context.Context, versions []string, limit int) ([]store.ClaimedTask, time.Time, error) {
	now := x.cfg.Clock.Now()
	token := x.claims.begin(now)
	claimed, err := x.cfg.Store.ClaimTasks(ctx, store.Claim{
		Worker: x.cfg.Worker, Versions: versions, Labels: x.cfg.Labels, Limit: limit,
		TenantLimit: x.cfg.TenantConcurrency, Now: now,
	})
	x.claims.end(token, claimed)
	if err == nil {
		x.cfg.Metrics.Claimed(ctx, x.cfg.Clock.Now().Sub(now), len(claimed))
	}
	return claimed, now, err
}

// drain adds the results waiting in the pipeline to batch, up to max.
func (p *pipeline) drain(batch *outcome, max int) {
	for batch.Len() < max {
		select {
		case r := <-p.results:
			batch.add(r)
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
//
// The children the store hands off to this engine as the batch is
// recorded start on the slots free then, and the others wait for one
// (see pipeline). The batch's places among the unrecorded results are
// given back after that, so that the slots the steps waiting for a place
// then free go to those children first. It returns the results of
// children known without running code, to be recorded next.
func (p *pipeline) record(ctx context.Context, batch outcome) store.Results {
	x := p.x
	defer p.releasePending(batch.pending)
	backoff := 100 * time.Millisecond
	p.expireWaiting(ctx)
	limit, reserved := p.handOffRoom(batch)
	defer p.unreserve(reserved)
	for {
		r, token := batch.Results, 0
		if limit > 0 {
			r.HandOff = store.HandOff{Worker: x.cfg.Worker, Versions: x.cfg.Planner.Versions(), Labels: x.cfg.Labels, Limit: limit}
			// A hand-off's lease is stamped no earlier than the batch's
			// time, so reconciliation leaves it be until it is owned.
			token = x.claims.begin(r.Now)
		}
		at := x.cfg.Clock.Now()
		res, err := x.cfg.Store.Finish(ctx, r)
		if r.HandOff.Limit > 0 {
			x.claims.end(token, res.HandedOff)
		}
		if err == nil {
			x.cfg.Faults.OK("recording task results", x.cfg.Clock.Now())
			x.afterFinish(batch.Results, res)
			if len(r.Retries) > 0 || len(r.Sleeps) > 0 || len(r.Awaits) > 0 || len(r.Spawns) > 0 {
				x.cfg.TimerSet() // the leader recomputes its wait
			}
			if len(res.HandedOff) == 0 {
				return store.Results{}
			}
			x.cfg.Metrics.HandedOff(ctx, len(res.HandedOff))
			// The children wait for slots, then take the free ones: the
			// oldest waiting go first.
			p.park(res.HandedOff, at)
			free := p.takeSlots(int(p.nWaiting.Load()))
			used, immediate := p.startWaiting(ctx, free)
			p.releaseSlots(free - used)
			return immediate
		}
		if errors.Is(err, store.ErrInvalidData) {
			p.recordRefused(ctx, batch.Results, err)
			return store.Results{}
		}
		if ctx.Err() != nil {
			return store.Results{}
		}
		x.cfg.Faults.Failed("recording task results", err, x.cfg.Clock.Now())
		t := x.cfg.Clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return store.Results{}
		case <-t.C():
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// handOffRoom is how many children a batch may take from the store
// straight to this engine (see handOff): as many as its completions name,
// up to the room left among the tasks handed off waiting for a slot,
// which it reserves until they are handed off.
func (p *pipeline) handOffRoom(batch outcome) (limit, reserved int) {
	if !p.handOff(batch) {
		return 0, 0
	}
	children := countChildren(batch.Completions)
	if children == 0 {
		return 0, 0
	}
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	room := max(waitRoom(cap(p.slots), cap(p.pending))-len(p.waiting)-p.reserved, 0)
	reserved = min(children, room)
	p.reserved += reserved
	return reserved, reserved
}

// countChildren counts the children the completions name, each once:
// the parents of a join that complete together each name it, and the
// store hands it off once, when the last of them is recorded.
func countChildren(completions []store.Completion) int {
	type child struct {
		run  uuid.UUID
		step int
	}
	seen := make(map[child]struct{}, len(completions))
	for _, c := range completions {
		for _, s := range c.Children {
			seen[child{c.Key.Run, s}] = struct{}{}
		}
	}
	return len(seen)
}

// waitRoom is how many tasks handed off may wait for a slot at once:
// twice the slots and the places among unrecorded results together. Each
// child of a completion waits for a slot, and the completions of the
// results in flight, recorded two batches at a time where Concurrency is
// large, name several children each where runs fan out (a diamond burn-down
// at Concurrency 1,000 sent 13,000 of 120,000 tasks through the queue
// with room for half as many).
func waitRoom(slots, unrecorded int) int { return 2 * (slots + unrecorded) }

// unreserve gives back room among the waiting tasks that handOffRoom
// reserved.
func (p *pipeline) unreserve(n int) {
	if n == 0 {
		return
	}
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	p.reserved -= n
}

// park adds tasks handed off at at to those waiting for a slot.
func (p *pipeline) park(tasks []store.ClaimedTask, at time.Time) {
	if len(tasks) == 0 {
		return
	}
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	for _, t := range tasks {
		p.waiting = append(p.waiting, handedOff{task: t, at: at})
	}
	p.nWaiting.Store(int64(len(p.waiting)))
	select {
	case p.parked <- struct{}{}:
	default:
	}
}

// startWaiting starts up to free waiting tasks, oldest first, on free
// slots the caller holds, and returns how many slots it used (the caller
// keeps the others) and the results known without running code, which
// the caller passes on to be recorded. A task whose run ended while it
// waited is not started but forgotten (the store ends it with its run),
// as is one this engine no longer owns.
func (p *pipeline) startWaiting(ctx context.Context, free int) (int, store.Results) {
	var ended []store.Attempt
	p.waitMu.Lock()
	if free <= 0 || len(p.waiting) == 0 {
		p.waitMu.Unlock()
		return 0, store.Results{}
	}
	start := make([]handedOff, 0, min(free, len(p.waiting)))
	taken := 0
	for ; taken < len(p.waiting) && len(start) < free; taken++ {
		w := p.waiting[taken]
		switch cl, ok := p.x.claims.about(AttemptOf(w.task)); {
		case ok && cl.runEnded:
			ended = append(ended, AttemptOf(w.task))
		case ok:
			start = append(start, w)
		}
	}
	// The others move to the front, so that the list keeps its room:
	// every child handed off passes through it.
	rest := copy(p.waiting, p.waiting[taken:])
	clear(p.waiting[rest:])
	p.waiting = p.waiting[:rest]
	p.nWaiting.Store(int64(rest))
	p.waitMu.Unlock()
	p.x.claims.release(ended...)
	n := len(start)
	var immediate store.Results
	for len(start) > 0 {
		// One run per hand-off: the tasks of a batch share its time.
		k := 1
		for k < len(start) && start[k].at.Equal(start[0].at) {
			k++
		}
		tasks := make([]store.ClaimedTask, k)
		for i := range k {
			tasks[i] = start[i].task
		}
		res, err := p.run(ctx, tasks, start[0].at, k)
		if err != nil {
			p.x.cfg.Log.Warn("could not start the tasks handed off; they went back to the queue", "tasks", k, "error", err)
		}
		Merge(&immediate, res)
		start = start[k:]
	}
	return n, immediate
}

// expireWaiting hands the tasks that have waited handOffWait for a slot
// back to the queue, unstarted, where any worker may take them.
func (p *pipeline) expireWaiting(ctx context.Context) {
	x := p.x
	cutoff := x.cfg.Clock.Now().Add(-handOffWait)
	p.waitMu.Lock()
	n := 0
	for n < len(p.waiting) && !p.waiting[n].at.After(cutoff) {
		n++
	}
	if n == 0 {
		p.waitMu.Unlock()
		return
	}
	expired := append([]handedOff(nil), p.waiting[:n]...)
	rest := copy(p.waiting, p.waiting[n:])
	clear(p.waiting[rest:])
	p.waiting = p.waiting[:rest]
	p.nWaiting.Store(int64(rest))
	p.waitMu.Unlock()
	tasks := make([]store.Attempt, n)
	for i, w := range expired {
		tasks[i] = AttemptOf(w.task)
	}
	x.handBack(ctx, tasks, fmt.Sprintf("the task waited %v for a free slot on worker %s", handOffWait, x.cfg.Worker), false)
}

// handOff reports whether a batch may take children from the store
// straight to this engine's steps: when it completes tasks, never under a
// tenant cap, which only claims enforce, or when the engine is configured
// not to.
func (p *pipeline) handOff(batch outcome) bool {
	return !p.x.cfg.DisableHandOff && p.x.cfg.TenantConcurrency == 0 && len(batch.Completions) > 0
}

// recordRefused records a batch the store refused: result by result, so
// that one bad result does not hold up the others, turning a refused
// result into a failure of its task (and handing the task back, should
// even that be refused).
func (p *pipeline) recordRefused(ctx context.Context, batch store.Results, cause error) {
	x := p.x
	if batch.Len() > 1 {
		for _, one := range split(batch) {
			p.record(ctx, outcome{Results: one})
		}
		return
	}
	a := attempts(batch)[0]
	if len(batch.Failures) == 1 && strings.HasPrefix(batch.Failures[0].Error, refusedPrefix) {
		// Counted: should the store refuse this task's results however
		// often it runs, its retry budget ends it, failed by the store.
		x.AttemptLog(a).Error("the store refused a task's failure too; handing the task back, counted", "error", cause)
		x.handBack(ctx, []store.Attempt{a}, "the store refused the task's result", true)
		return
	}
	x.AttemptLog(a).Error("the store refused a task result; failing the task", "error", cause)
	if cl, ok := x.claims.about(a); ok {
		x.cfg.Metrics.Quarantine(ctx, cl.workflow, cl.tenant)
	}
	p.record(ctx, outcome{Results: store.Results{Now: batch.Now, Failures: []store.Failure{{Attempt: a, Error: refusedPrefix + CleanText(cause.Error())}}}})
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
func (x *Executor) countFinishedRuns(batch store.Results, finished []uuid.UUID) {
	failed := map[uuid.UUID]bool{}
	for _, f := range batch.Failures {
		failed[f.Key.Run] = true
	}
	owners := map[uuid.UUID]claim{}
	for _, a := range attempts(batch) {
		if _, ok := owners[a.Key.Run]; !ok {
			if cl, ok := x.claims.about(a); ok {
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
		outcome := telemetry.OutcomeCompleted
		if failed[id] {
			outcome = telemetry.OutcomeFailed
		}
		x.cfg.Metrics.RunFinished(ctx, cl.workflow, cl.tenant, outcome)
	}
}

// afterFinish wakes whoever waits on what a Finish changed.
func (x *Executor) afterFinish(batch store.Results, res store.FinishResult) {
	if x.cfg.Metrics != nil && len(res.Finished) > 0 {
		x.countFinishedRuns(batch, res.Finished) // while the claims still say whose tasks these were
	}
	for _, a := range res.Stale {
		// The store refused the result: the attempt no longer holds its
		// task. Logged before the claim is released, to name the step.
		x.AttemptLog(a).Info("result dropped: the attempt no longer holds its task (its run ended, or the task was taken over)")
	}
	x.cfg.Metrics.RefusedStale(context.Background(), len(res.Stale))
	// A failure handler's result makes its (ended) run's result final:
	// whoever waits for the run here is told at once (see Wait).
	var handled []uuid.UUID
	for _, a := range attempts(batch) {
		if cl, ok := x.claims.about(a); ok && cl.handler {
			handled = append(handled, a.Key.Run)
		}
	}
	x.claims.release(attempts(batch)...)
	for _, id := range handled {
		x.cfg.RunEnded(id)
	}
	for _, id := range res.Finished {
		x.claims.stopRun(id, ErrRunEnded)
		x.cfg.RunEnded(id)
	}
	if len(batch.Completions) > 0 || len(res.Finished) > 0 {
		x.Wake() // children (or a failure handler) may be queued
	}
}
