package executor

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/google/uuid"
)

// loops are what a started executor runs around its pipeline.
type loops struct {
	p            *pipeline
	startedAt    time.Time          // the clock's reading at Start
	cancel       context.CancelFunc // stops the loops
	stopClaiming chan struct{}      // closed by Stop
	claimDone    chan struct{}      // closed when the claim loop returns
	flushStop    chan struct{}      // closed by Stop once steps drained
	flushed      chan struct{}      // closed when the flushers return
	wg           sync.WaitGroup
}

// Start starts the loops: claiming while slots are free, recording
// results, and heartbeating. startedAt is when the engine started (it
// said it was alive then): tasks leased to this worker before were
// taken by an earlier process under the same name. ctx's end stops the
// loops abruptly; Stop stops them gracefully.
func (x *Executor) Start(ctx context.Context, startedAt time.Time) {
	loopCtx, cancel := context.WithCancel(ctx)
	lc := &loops{
		p: newPipeline(x, ctx), startedAt: startedAt, cancel: cancel,
		stopClaiming: make(chan struct{}), claimDone: make(chan struct{}),
		flushStop: make(chan struct{}), flushed: make(chan struct{}),
	}
	// A started engine's steps reuse goroutines (see spawn); they exit a
	// second after the engine goes idle, or when it stops.
	lc.p.stepIdle = time.Second
	recorders := x.recorders()
	lc.wg.Add(2 + recorders)
	go func() { defer lc.wg.Done(); defer close(lc.claimDone); x.claimLoop(loopCtx, lc) }()
	var flushers sync.WaitGroup
	flushers.Add(recorders)
	for range recorders {
		go func() { defer lc.wg.Done(); defer flushers.Done(); x.flushLoop(loopCtx, lc) }()
	}
	go func() { flushers.Wait(); close(lc.flushed) }()
	go func() { defer lc.wg.Done(); x.heartbeatLoop(loopCtx, lc) }()
	x.mu.Lock()
	x.lc = lc
	x.mu.Unlock()
}

// Stop stops claiming, lets running steps finish and records their
// results until ctx ends, then cancels the steps still running (with
// Config.Stopped) and hands their tasks back to the queue for other
// engines (each such attempt counts against its step's retries, as if
// the worker had died), as well as the tasks whose results could not be
// recorded (these do not count: their code finished). It returns ctx's
// error when steps had to be abandoned or results could not be
// recorded.
func (x *Executor) Stop(ctx context.Context) error {
	x.mu.Lock()
	lc := x.lc
	x.mu.Unlock()
	if lc == nil {
		return nil
	}
	lc.p.stop()
	close(lc.stopClaiming)
	<-lc.claimDone
	drained := make(chan struct{})
	go func() { lc.p.steps.Wait(); close(drained) }()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("engine: stopped before running steps finished: %w", ctx.Err())
		x.claims.abandonRunning()
		close(lc.p.abandon)
		lc.p.stepCancel(x.cfg.Stopped)
	}
	// Record what the drained steps returned before stopping the loops
	// (heartbeats included: the tasks are still ours until recorded).
	close(lc.flushStop)
	select {
	case <-lc.flushed:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("engine: stopped before results were recorded: %w", ctx.Err())
		}
	}
	lc.cancel()
	lc.wg.Wait()
	lc.p.stepCancel(x.cfg.Stopped)
	// What is still owned was abandoned mid-step (an attempt, as if the
	// worker had died), or its result could not be recorded: give it back
	// now rather than after StaleAfter. Should that fail too, the tasks are
	// recovered once this worker's heartbeats are stale.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	abandoned, unrecorded := x.claims.abandonedAndRest()
	x.handBack(hctx, abandoned, fmt.Sprintf("worker %s stopped while the step ran", x.cfg.Worker), true)
	x.handBack(hctx, unrecorded, fmt.Sprintf("worker %s stopped before the task's result was recorded", x.cfg.Worker), false)
	return err
}

// claimLoop claims ready tasks while there are free slots, and waits for a
// wake-up or the poll interval when there is nothing to claim.
func (x *Executor) claimLoop(ctx context.Context, lc *loops) {
	for {
		// Take one slot (waiting for a step to finish if all are busy), then
		// as many more as are free, up to a batch.
		select {
		case lc.p.slots <- struct{}{}:
		case <-lc.stopClaiming:
			return
		case <-ctx.Done():
			return
		}
		free := x.gatherSlots(lc)
		if free == 0 {
			continue // taken meanwhile
		}
		started, n, err := lc.p.claimAndRun(ctx, free)
		switch {
		case err != nil && ctx.Err() == nil:
			x.cfg.Faults.Failed("claiming tasks", err, x.cfg.Clock.Now())
		case err == nil:
			x.cfg.Faults.OK("claiming tasks", x.cfg.Clock.Now())
		}
		if err == nil && (started > 0 || started+n == free) {
			continue // more may wait, or the queue may hold more
		}
		t := x.cfg.Clock.NewTimer(x.cfg.PollInterval)
		select {
		case <-lc.stopClaiming:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-x.wakeup:
		case <-t.C():
		}
		t.Stop()
	}
}

// gatherSlots takes the free slots, up to a claim batch, once one is
// already taken, and returns how many it holds (none, at times). While
// other steps run and few slots are free, it waits up to the batch window
// for more, so that a busy engine claims in batches rather than a task at
// a time; an idle engine claims at once, and so does one with tasks
// handed off waiting for a slot, which take the slots first (see
// claimAndRun). It waits without holding the slots: a step's slot frees
// when its code returns, and the children its completion hands off may
// need it as soon as the completion is recorded.
func (x *Executor) gatherSlots(lc *loops) int {
	p := lc.p
	batch := x.cfg.ClaimBatch
	free := 1 + p.takeSlots(batch-1)
	busy := len(p.slots) > free
	if free >= batch/2 || !busy || x.cfg.BatchWindow <= 0 || p.nWaiting.Load() > 0 {
		return free
	}
	p.releaseSlots(free)
	t := x.cfg.Clock.NewTimer(x.cfg.BatchWindow)
	defer t.Stop()
	for cap(p.slots)-len(p.slots) < batch/2 && p.nWaiting.Load() == 0 {
		select {
		case <-p.freed:
		case <-p.parked:
		case <-t.C():
			return p.takeSlots(batch)
		case <-lc.stopClaiming:
			return p.takeSlots(batch)
		}
	}
	return p.takeSlots(batch)
}

// recorders is how many flush loops an engine runs, each recording a
// batch of results at a time. With two, the next batch is gathered and
// sent while one is in the database, which then works on two at once; but
// each batch is smaller, and a small batch costs the database more per
// result. So two only where the slots make batches of 200 or more (a
// chain-5 burn-down, one worker: at Concurrency 1,000, 20,000 tasks/s
// with one and 26,000-27,000 with two; at 100, two cost 30% more
// database CPU a task and gained nothing).
func (x *Executor) recorders() int {
	if x.cfg.Concurrency >= 400 {
		return 2
	}
	return 1
}

// flushLoop records results in batches: whatever arrived while the
// previous Finish was in flight goes in the next one, after the results
// the previous one's hand-offs produced without running code.
func (x *Executor) flushLoop(ctx context.Context, lc *loops) {
	var carry store.Results
	for {
		batch := outcome{Results: carry}
		if batch.Len() == 0 {
			select {
			case r := <-lc.p.results:
				batch.add(r)
			case <-lc.flushStop:
				// Record what is buffered, then stop.
				lc.p.drain(&batch, math.MaxInt)
				for batch.Len() > 0 {
					batch = outcome{Results: lc.p.record(ctx, batch)}
				}
				return
			case <-ctx.Done():
				return
			}
		}
		x.gatherResults(lc, &batch)
		carry = lc.p.record(ctx, batch)
	}
}

// gatherResults adds waiting results to batch. While steps are still
// running (or tasks handed off wait for a slot to run in), it waits up to
// the batch window for theirs too, so that a busy engine records results
// in batches; an idle one records at once, and so does one whose steps
// wait for the results before them to be recorded (see pipeline).
func (x *Executor) gatherResults(lc *loops, batch *outcome) {
	var t clock.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for batch.Len() < maxFlush {
		lc.p.drain(batch, maxFlush)
		if batch.Len() >= maxFlush || lc.p.inCode.Load() == 0 && lc.p.nWaiting.Load() == 0 || x.cfg.BatchWindow <= 0 {
			return // no step's code is running or waits for a slot: nothing more is coming soon
		}
		if len(lc.p.pending) == cap(lc.p.pending) {
			return // steps wait for this batch to be recorded before they hand over more
		}
		if t == nil {
			t = x.cfg.Clock.NewTimer(x.cfg.BatchWindow)
		}
		select {
		case r := <-lc.p.results:
			batch.add(r)
		case <-t.C():
			return
		case <-lc.flushStop:
			return
		}
	}
}

// heartbeatLoop tells the store this worker is alive (which keeps its
// tasks from being recovered) and reconciles what the store says it holds
// with what it owns: code of tasks it no longer holds is stopped, and
// tasks it holds no attempt for are handed back.
func (x *Executor) heartbeatLoop(ctx context.Context, lc *loops) {
	c := x.cfg.Clock
	for {
		if clock.Sleep(ctx, c, x.cfg.HeartbeatInterval) != nil {
			return
		}
		before := x.claims.owned()
		held, err := x.cfg.Store.Heartbeat(ctx, x.cfg.Worker, c.Now())
		if err != nil {
			if ctx.Err() == nil {
				x.cfg.Faults.Failed("heartbeating", err, c.Now())
			}
			continue
		}
		x.cfg.Faults.OK("heartbeating", c.Now())
		// Where every slot holds a long step, nothing else hands the tasks
		// waiting for one back.
		lc.p.expireWaiting(ctx)
		lost, orphans := x.claims.reconcile(before, held)
		// Most "lost" tasks just had their results recorded; only code that
		// is still running for a task we no longer hold is news. A task
		// lost because its run ended (cancelled, failed elsewhere, past
		// its deadline) stops with the run's end as its cause, as StopRun
		// would have given it had the news of the run's end come first.
		lost = x.stopEndedRuns(ctx, lost)
		if n := x.claims.stop(lost, errTaskLost); n > 0 {
			x.cfg.Log.Warn("stopped steps of tasks this worker no longer holds (cancelled or recovered elsewhere)", "count", n)
		}
		if len(orphans) > 0 {
			x.cfg.Log.Warn("found tasks leased to this worker that it runs no attempt for; handing them back", "count", len(orphans))
			// Leases older than this engine were taken by an earlier process
			// under the same worker id, which died: their code may have run,
			// so they count as attempts, as a dead worker's tasks do (a step
			// that crashes its process is not retried forever). Younger ones
			// come from a claim whose answer was lost: their code never ran.
			var earlier, lost []store.Attempt
			for _, l := range orphans {
				if l.ClaimedAt.Before(lc.startedAt) {
					earlier = append(earlier, l.Attempt)
				} else {
					lost = append(lost, l.Attempt)
				}
			}
			x.handBack(ctx, earlier, fmt.Sprintf("an earlier process of worker %s died holding the task", x.cfg.Worker), true)
			x.handBack(ctx, lost, fmt.Sprintf("worker %s held the task without running it", x.cfg.Worker), false)
		}
	}
}

// stopEndedRuns stops the running code of the lost attempts whose run
// ended, with the run's end as the cause (EndCause), and returns the
// other attempts. It reads a run only when code of it is running.
func (x *Executor) stopEndedRuns(ctx context.Context, lost []store.Attempt) []store.Attempt {
	if x.cfg.EndCause == nil || len(lost) == 0 {
		return lost
	}
	byRun := map[uuid.UUID][]store.Attempt{}
	for _, a := range lost {
		byRun[a.Key.Run] = append(byRun[a.Key.Run], a)
	}
	var rest []store.Attempt
	for run, attempts := range byRun {
		if !x.claims.runsCode(run) {
			rest = append(rest, attempts...)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, endCauseTimeout)
		cause := x.cfg.EndCause(rctx, run)
		cancel()
		if cause == nil {
			rest = append(rest, attempts...)
			continue
		}
		x.claims.stop(attempts, cause)
	}
	return rest
}
