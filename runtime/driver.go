package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Driver runs an engine by hand instead of Start: nothing happens until
// it is told to, so that a test on a virtual clock is deterministic (see
// the trellistest package, which owns one). Its tasks go through the same
// pipeline as a started engine's: claimed in batches, steps run
// concurrently, each result recorded as soon as it is returned, refused
// results failing their task. A step that blocks until it is cancelled
// therefore ends as soon as its run fails or is cancelled, whatever else
// is running.
//
// While an engine has a driver, its Wait and WaitMany (and so a generated
// client's Run) drive the engine instead of waiting: they run everything
// that can run at the clock's current time and return the runs' states,
// with ErrStillRunning when a run waits on time.
type Driver struct {
	e  *Engine
	p  *pipeline
	mu sync.Mutex // one drive at a time
}

// NewDriver makes d the driver of e, which must not be started; an engine
// has at most one driver. A driven engine does the leader's work, so with
// a MeterProvider it reports the queue gauges, for as long as the provider
// lives.
func NewDriver(e *Engine) (*Driver, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.started:
		return nil, errors.New("runtime.NewDriver: the engine is started")
	case e.driver != nil:
		return nil, errors.New("runtime.NewDriver: the engine already has a driver")
	}
	if _, err := e.observeGauges(); err != nil {
		return nil, err
	}
	d := &Driver{e: e, p: newPipeline(e, context.Background())}
	e.driver = d
	return d, nil
}

// Engine is the engine d drives.
func (d *Driver) Engine() *Engine { return d.e }

// RunUntilIdle fires the timers that are due and runs the tasks that are
// ready, recording each result as it arrives and running the tasks it
// makes ready, until no timer is due, no task is ready and no step is
// running: nothing more can happen without the clock moving. It returns
// how many tasks it claimed. A step that blocks keeps it waiting until the
// step returns or is cancelled (its run ends, however it ends, or its
// timeout passes on the engine's clock); meanwhile it follows what other
// goroutines do as a started engine would: a durable timer or cron tick
// that falls due as the clock is moved fires, and tasks that become ready
// run.
func (d *Driver) RunUntilIdle(ctx context.Context) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, p := d.e, d.p
	total := 0
	var carry store.Results // what the last hand-offs produced without running code
	// While steps block, the store's notifications are followed as a
	// started engine follows them (see blocked).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var notes <-chan store.Notification
	if _, err := e.fireSchedules(ctx); err != nil {
		return total, err
	}
	for {
		fired, err := e.fireTimers(ctx)
		if err != nil {
			return total, err
		}
		started, claimed := 0, 0
		if free := p.takeSlots(e.cfg.ClaimBatch); free > 0 {
			started, claimed, err = p.claimAndRun(ctx, free)
			total += claimed
			if err != nil {
				return total, err
			}
		}
		// Steps hand over their result before they stop counting as
		// running: once none runs, every result is in the pipeline.
		running := p.running.Load()
		batch := outcome{Results: carry}
		carry = store.Results{}
		p.drain(&batch, maxFlush)
		if batch.Len() == 0 && fired == 0 && claimed == 0 && started == 0 {
			if running == 0 {
				return total, nil
			}
			// Only running steps can make progress, or time moved by
			// another goroutine, or another goroutine's doing: wait for
			// one of them.
			if notes == nil {
				if notes, err = d.follow(ctx); err != nil {
					return total, err
				}
			}
			r, err := d.blocked(ctx, notes)
			if err != nil {
				return total, err
			}
			if r != nil {
				batch.add(*r)
				p.drain(&batch, maxFlush)
			}
		}
		if batch.Len() > 0 {
			carry = p.record(ctx, batch)
			if err := ctx.Err(); err != nil {
				return total, err
			}
		}
	}
}

// follow starts following the store's notifications for the rest of a
// drive, and stops the steps of runs that ended before it did.
func (d *Driver) follow(ctx context.Context) (<-chan store.Notification, error) {
	e := d.e
	notes, err := e.store.Listen(ctx)
	if err != nil {
		return nil, err
	}
	runs := e.claims.heldRuns()
	if len(runs) == 0 {
		return notes, nil
	}
	statuses, err := e.store.RunStatuses(ctx, runs)
	if err != nil {
		return nil, err
	}
	for id, status := range statuses {
		if status.Terminal() {
			e.claims.stopRun(id, errRunEnded)
		}
	}
	return notes, nil
}

// blocked waits, while steps run, for what can make progress: a step
// ending (its result, when it has one), the clock reaching the next
// durable timer or cron tick (another goroutine moved it), or a store
// notification. A run that ended stops its steps, as on a started engine,
// whatever ended it: a failure, a cancellation, or a cascade from
// another run (a map item's run when another item fails for good, a child
// run when its parent is cancelled). It returns with nothing to record
// when the caller should look for work again.
func (d *Driver) blocked(ctx context.Context, notes <-chan store.Notification) (*outcome, error) {
	e, p := d.e, d.p
	next, ok, err := e.store.NextTimer(ctx)
	if err != nil {
		return nil, err
	}
	if tick, due := d.NextScheduleTick(); due && (!ok || tick.Before(next)) {
		next, ok = tick, true
	}
	var due <-chan time.Time
	if ok {
		wait := next.Sub(e.clock.Now())
		if wait <= 0 {
			_, err := e.fireSchedules(ctx) // timers fire as the caller goes on
			return nil, err
		}
		t := e.clock.NewTimer(wait)
		defer t.Stop()
		due = t.C()
	}
	select {
	case r := <-p.results:
		return &r, nil
	case <-p.stepEnded:
	case <-due:
		_, err := e.fireSchedules(ctx)
		return nil, err
	case n := <-notes:
		if n.Kind == store.RunFinished {
			e.claims.stopRun(n.Run, errRunEnded)
			e.runFinished(n.Run)
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, nil
}

// NextScheduleTick returns when the next tick of a cron schedule of a
// registered workflow is due, after the clock's time; false when none
// has schedules. RunUntilIdle fires the ticks that are due.
func (d *Driver) NextScheduleTick() (time.Time, bool) {
	return d.e.nextScheduleTick(d.e.clock.Now())
}

// wait drives the engine until nothing more can happen now and returns
// the run's state.
func (d *Driver) wait(ctx context.Context, id RunID) (*RunResult, error) {
	if _, err := d.RunUntilIdle(ctx); err != nil {
		return nil, err
	}
	res, err := d.e.Result(ctx, id)
	if err != nil {
		return nil, err
	}
	err = res.Err()
	return res, err
}
