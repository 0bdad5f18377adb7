package runtime

import (
	"context"
	"time"

	"github.com/effectivelabs/trellis/runtime/internal/executor"
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
	e    *Engine
	hand *executor.Hand
}

// NewDriver makes d the driver of e, which must not be started; an engine
// has at most one driver. A driven engine does the leader's work, so with
// a MeterProvider it reports the queue gauges, for as long as the provider
// lives.
func NewDriver(e *Engine) (*Driver, error) {
	return e.mode.setDriver(func() (*Driver, error) {
		if _, err := e.observeGauges(); err != nil {
			return nil, err
		}
		return &Driver{e: e, hand: e.exec.NewHand()}, nil
	})
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
	e := d.e
	return d.hand.RunUntilIdle(ctx, executor.Drive{
		FireTimers: e.leading.timers.FireDue,
		FireSchedules: func(ctx context.Context) error {
			_, err := e.cron.fire(ctx)
			return err
		},
		NextTick: d.NextScheduleTick,
	})
}

// NextScheduleTick returns when the next tick of a cron schedule of a
// registered workflow is due, after the clock's time; false when none
// has schedules. RunUntilIdle fires the ticks that are due.
func (d *Driver) NextScheduleTick() (time.Time, bool) {
	return d.e.cron.nextTick(d.e.clock.Now())
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
