package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
)

// maxFlush bounds how many results go to the store in one Finish call.
const maxFlush = 512

// lifecycle holds what a started engine runs: its loops around the
// pipeline.
type lifecycle struct {
	p            *pipeline
	startedAt    time.Time          // the clock's reading at Start
	cancel       context.CancelFunc // stops the loops
	stopClaiming chan struct{}      // closed by Stop
	claimDone    chan struct{}      // closed when the claim loop returns
	flushStop    chan struct{}      // closed by Stop once steps drained
	flushed      chan struct{}      // closed when the flusher returns
	loops        sync.WaitGroup
	gauges       metric.Registration // the metric gauges' callback; nil without metrics
}

// Start begins executing: claiming ready tasks of registered workflows,
// heartbeating, and taking part in leader election for firing timers,
// recovering tasks of dead workers and deleting finished runs past their
// retention (Config.Retention). It returns at once. Cancelling ctx
// stops the engine abruptly; use Stop for a graceful shutdown.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	switch {
	case e.started || e.stopping:
		e.mu.Unlock()
		return errors.New("engine: Start called twice")
	case e.driver != nil:
		e.mu.Unlock()
		return errors.New("engine: a Driver runs this engine by hand; it cannot be started")
	}
	e.started = true // reserved: Register and NewDriver refuse from now on
	e.mu.Unlock()

	lc, err := e.startLoops(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.started = false
		return err
	}
	e.lifecycle = lc
	e.log.Info("engine started", "workflows", e.names, "concurrency", e.cfg.Concurrency)
	return nil
}

// startLoops says this worker is alive, subscribes to wake-ups and starts
// the loops. A database that is briefly down (restarting) is waited for.
func (e *Engine) startLoops(ctx context.Context) (*lifecycle, error) {
	started := e.clock.Now()
	// Say we are alive before claiming anything.
	err := retryTransient(ctx, e.clock, func() error {
		_, err := e.store.Heartbeat(ctx, e.cfg.WorkerID, e.clock.Now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("engine: registering worker: %w", err)
	}
	gauges, err := e.observeGauges()
	if err != nil {
		return nil, err
	}
	loopCtx, cancel := context.WithCancel(ctx)
	var notes <-chan store.Notification
	err = retryTransient(ctx, e.clock, func() (err error) {
		notes, err = e.store.Listen(loopCtx)
		return err
	})
	if err != nil {
		cancel()
		if gauges != nil {
			_ = gauges.Unregister()
		}
		return nil, fmt.Errorf("engine: listening for wake-ups: %w", err)
	}
	lc := &lifecycle{
		p: newPipeline(e, ctx), startedAt: started, cancel: cancel, gauges: gauges,
		stopClaiming: make(chan struct{}), claimDone: make(chan struct{}),
		flushStop: make(chan struct{}), flushed: make(chan struct{}),
	}
	// A started engine's steps reuse goroutines (see spawn); they exit a
	// second after the engine goes idle, or when it stops.
	lc.p.stepIdle = time.Second
	recorders := e.recorders()
	lc.loops.Add(4 + recorders)
	go func() { defer lc.loops.Done(); defer close(lc.claimDone); e.claimLoop(loopCtx, lc) }()
	var flushers sync.WaitGroup
	flushers.Add(recorders)
	for range recorders {
		go func() { defer lc.loops.Done(); defer flushers.Done(); e.flushLoop(loopCtx, lc) }()
	}
	go func() { flushers.Wait(); close(lc.flushed) }()
	go func() { defer lc.loops.Done(); e.heartbeatLoop(loopCtx, lc) }()
	go func() { defer lc.loops.Done(); e.listenLoop(notes) }()
	go func() { defer lc.loops.Done(); e.scheduleLoop(loopCtx) }()
	e.leading.start(loopCtx)
	return lc, nil
}

// Stop shuts the engine down gracefully: it stops claiming, lets running
// steps finish and records their results until ctx ends, then cancels the
// steps still running and hands their tasks back to the queue for other
// engines (each such attempt counts against its step's retries, as if the
// worker had died), as well as the tasks whose results could not be
// recorded (these do not count: their code finished), releases
// leadership and returns. It returns ctx's error when steps had to be
// abandoned or results could not be recorded.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	lc := e.lifecycle
	if lc == nil || e.stopping {
		e.mu.Unlock()
		return nil
	}
	e.stopping = true
	e.mu.Unlock()

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
		e.claims.abandonRunning()
		close(lc.p.abandon)
		lc.p.stepCancel(ErrStopped)
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
	e.leading.stop()
	lc.loops.Wait()
	lc.p.stepCancel(ErrStopped)
	if lc.gauges != nil {
		if uerr := lc.gauges.Unregister(); uerr != nil {
			e.log.Warn("unregistering the metric gauges", "error", uerr)
		}
	}
	// What is still owned was abandoned mid-step (an attempt, as if the
	// worker had died), or its result could not be recorded: give it back
	// now rather than after StaleAfter. Should that fail too, the tasks are
	// recovered once this worker's heartbeats are stale.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	abandoned, unrecorded := e.claims.abandonedAndRest()
	e.handBack(hctx, abandoned, fmt.Sprintf("worker %s stopped while the step ran", e.cfg.WorkerID), true)
	e.handBack(hctx, unrecorded, fmt.Sprintf("worker %s stopped before the task's result was recorded", e.cfg.WorkerID), false)
	e.log.Info("engine stopped")
	return err
}

// claimLoop claims ready tasks while there are free slots, and waits for a
// wake-up or the poll interval when there is nothing to claim.
func (e *Engine) claimLoop(ctx context.Context, lc *lifecycle) {
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
		free := e.gatherSlots(lc)
		started, n, err := lc.p.claimAndRun(ctx, free)
		switch {
		case err != nil && ctx.Err() == nil:
			e.faults.Failed("claiming tasks", err, e.clock.Now())
		case err == nil:
			e.faults.OK("claiming tasks", e.clock.Now())
		}
		if started+n == free && err == nil {
			continue // the queue may hold more
		}
		t := e.clock.NewTimer(e.cfg.PollInterval)
		select {
		case <-lc.stopClaiming:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.localWakeup:
		case <-t.C():
		}
		t.Stop()
	}
}

// gatherSlots takes the free slots, up to a claim batch, once one is
// already taken. While other steps run and few slots are free, it waits up
// to the batch window for more, so that a busy engine claims in batches
// rather than a task at a time; an idle engine claims at once.
func (e *Engine) gatherSlots(lc *lifecycle) int {
	free := 1 + lc.p.takeSlots(e.cfg.ClaimBatch-1)
	busy := len(lc.p.slots) > free
	if free >= e.cfg.ClaimBatch/2 || !busy || e.cfg.BatchWindow <= 0 {
		return free
	}
	t := e.clock.NewTimer(e.cfg.BatchWindow)
	defer t.Stop()
	for free < e.cfg.ClaimBatch/2 {
		select {
		case lc.p.slots <- struct{}{}:
			free++
		case <-t.C():
			return free
		case <-lc.stopClaiming:
			return free
		}
	}
	return free
}

// recorders is how many flush loops an engine runs, each recording a
// batch of results at a time. With two, the next batch is gathered and
// sent while one is in the database, which then works on two at once; but
// each batch is smaller, and a small batch costs the database more per
// result. So two only where the slots make batches of 200 or more (a
// chain-5 burn-down, one worker: at Concurrency 1,000, 20,000 tasks/s
// with one and 26,000-27,000 with two; at 100, two cost 30% more
// database CPU a task and gained nothing).
func (e *Engine) recorders() int {
	if e.cfg.Concurrency >= 400 {
		return 2
	}
	return 1
}

// flushLoop records results in batches: whatever arrived while the
// previous Finish was in flight goes in the next one, after the results
// the previous one's hand-offs produced without running code.
func (e *Engine) flushLoop(ctx context.Context, lc *lifecycle) {
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
		e.gatherResults(lc, &batch)
		carry = lc.p.record(ctx, batch)
	}
}

// gatherResults adds waiting results to batch. While steps are still
// running, it waits up to the batch window for theirs too, so that a busy
// engine records results in batches; an idle one records at once.
func (e *Engine) gatherResults(lc *lifecycle, batch *outcome) {
	var t clock.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for batch.Len() < maxFlush {
		lc.p.drain(batch, maxFlush)
		if batch.Len() >= maxFlush || lc.p.inCode.Load() == 0 || e.cfg.BatchWindow <= 0 {
			return // no step's code is running: nothing more is coming soon
		}
		if t == nil {
			t = e.clock.NewTimer(e.cfg.BatchWindow)
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
func (e *Engine) heartbeatLoop(ctx context.Context, lc *lifecycle) {
	for {
		if clock.Sleep(ctx, e.clock, e.cfg.HeartbeatInterval) != nil {
			return
		}
		before := e.claims.owned()
		held, err := e.store.Heartbeat(ctx, e.cfg.WorkerID, e.clock.Now())
		if err != nil {
			if ctx.Err() == nil {
				e.faults.Failed("heartbeating", err, e.clock.Now())
			}
			continue
		}
		e.faults.OK("heartbeating", e.clock.Now())
		// Where every slot holds a long step, nothing else hands the tasks
		// waiting for one back.
		lc.p.expireWaiting(ctx)
		lost, orphans := e.claims.reconcile(before, held)
		// Most "lost" tasks just had their results recorded; only code that
		// is still running for a task we no longer hold is news.
		if n := e.claims.stop(lost, errTaskLost); n > 0 {
			e.log.Warn("stopped steps of tasks this worker no longer holds (cancelled or recovered elsewhere)", "count", n)
		}
		if len(orphans) > 0 {
			e.log.Warn("found tasks leased to this worker that it runs no attempt for; handing them back", "count", len(orphans))
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
			e.handBack(ctx, earlier, fmt.Sprintf("an earlier process of worker %s died holding the task", e.cfg.WorkerID), true)
			e.handBack(ctx, lost, fmt.Sprintf("worker %s held the task without running it", e.cfg.WorkerID), false)
		}
	}
}

// listenLoop turns store notifications into local wake-ups: of the claim
// loop, of the steps of a run that ended, and of the leader's timer
// firer.
func (e *Engine) listenLoop(notes <-chan store.Notification) {
	for n := range notes {
		switch n.Kind {
		case store.TasksReady:
			e.wake()
		case store.TimerSet:
			e.leading.timers.Nudge()
		case store.RunFinished:
			e.claims.stopRun(n.Run, errRunEnded)
			e.runFinished(n.Run)
		}
	}
}
