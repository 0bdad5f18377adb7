package executor

import (
	"context"
	"sync"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Hand drives an executor by hand instead of its loops, for a test's
// Driver: nothing happens until RunUntilIdle. Its tasks go through the
// same pipeline as a started executor's: claimed in batches, steps run
// concurrently, each result recorded as soon as it is returned, refused
// results failing their task.
type Hand struct {
	x  *Executor
	p  *pipeline
	mu sync.Mutex // one drive at a time
}

// NewHand returns a hand on x, which must not be started.
func (x *Executor) NewHand() *Hand {
	return &Hand{x: x, p: newPipeline(x, context.Background())}
}

// Drive is what a hand needs of the rest of the engine while it drives:
// the leader's timers and the cron schedules, which a driven engine fires
// itself.
type Drive struct {
	// FireTimers fires the durable timers that are due, and returns how
	// many fired.
	FireTimers func(ctx context.Context) (int, error)
	// FireSchedules triggers the runs of the cron ticks that are due.
	FireSchedules func(ctx context.Context) error
	// NextTick returns when the next cron tick is due; false when there
	// are no schedules.
	NextTick func() (time.Time, bool)
}

// RunUntilIdle fires the timers that are due and runs the tasks that are
// ready, recording each result as it arrives and running the tasks it
// makes ready, until no timer is due, no task is ready and no step is
// running: nothing more can happen without the clock moving. It returns
// how many tasks it claimed. While steps block, it follows what other
// goroutines do as a started engine would (see blocked).
func (h *Hand) RunUntilIdle(ctx context.Context, d Drive) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	x, p := h.x, h.p
	total := 0
	var carry store.Results // what the last hand-offs produced without running code
	// While steps block, the store's notifications are followed as a
	// started engine follows them (see blocked).
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var notes <-chan store.Notification
	if err := d.FireSchedules(ctx); err != nil {
		return total, err
	}
	for {
		fired, err := d.FireTimers(ctx)
		if err != nil {
			return total, err
		}
		started, claimed := 0, 0
		if free := p.takeSlots(x.cfg.ClaimBatch); free > 0 {
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
				if notes, err = h.follow(ctx); err != nil {
					return total, err
				}
			}
			r, err := h.blocked(ctx, d, notes)
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
func (h *Hand) follow(ctx context.Context) (<-chan store.Notification, error) {
	x := h.x
	notes, err := x.cfg.Store.Listen(ctx)
	if err != nil {
		return nil, err
	}
	runs := x.claims.heldRuns()
	if len(runs) == 0 {
		return notes, nil
	}
	statuses, err := x.cfg.Store.RunStatuses(ctx, runs)
	if err != nil {
		return nil, err
	}
	for id, status := range statuses {
		if status.Terminal() {
			x.StopRun(id)
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
func (h *Hand) blocked(ctx context.Context, d Drive, notes <-chan store.Notification) (*outcome, error) {
	x, p := h.x, h.p
	next, ok, err := x.cfg.Store.NextTimer(ctx)
	if err != nil {
		return nil, err
	}
	if tick, due := d.NextTick(); due && (!ok || tick.Before(next)) {
		next, ok = tick, true
	}
	var due <-chan time.Time
	if ok {
		wait := next.Sub(x.cfg.Clock.Now())
		if wait <= 0 {
			return nil, d.FireSchedules(ctx) // timers fire as the caller goes on
		}
		t := x.cfg.Clock.NewTimer(wait)
		defer t.Stop()
		due = t.C()
	}
	select {
	case r := <-p.results:
		return &r, nil
	case <-p.stepEnded:
	case <-due:
		return nil, d.FireSchedules(ctx)
	case n := <-notes:
		if n.Kind == store.RunFinished {
			x.StopRun(n.Run)
			x.cfg.RunEnded(n.Run)
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, nil
}
