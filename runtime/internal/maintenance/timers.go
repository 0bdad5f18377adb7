package maintenance

import (
	"context"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/internal/testsignal"
	"github.com/effectivelabs/trellis/runtime/store"
)

// TimerConfig configures a TimerFirer.
type TimerConfig struct {
	// Interval bounds how late a timer set by another process fires
	// (default 1s): the firer looks at least this often.
	Interval time.Duration
	// Fired is told about the timers that fired (the engine counts the
	// sleeps that completed and wakes whoever waits on their runs).
	Fired func(ctx context.Context, fired []store.FiredTimer)
	// RunsFired is told about the run timers that fired: the delayed runs
	// that started and the runs whose deadline failed them.
	RunsFired func(ctx context.Context, fired []store.FiredRunTimer)

	Store   store.Store
	Clock   clock.Clock
	Metrics *telemetry.Metrics
	Faults  *telemetry.Faults
	// Health is told of store failures (they delay recovery).
	Health *StoreHealth
}

func (c *TimerConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
}

// timerBatch is the most timers one store call fires.
const timerBatch = 1000

// TimerFirer fires durable timers as they fall due: sleeping tasks wake,
// retrying tasks are queued for their next attempt, delayed runs start,
// and runs whose deadline passed fail.
type TimerFirer struct {
	cfg  TimerConfig
	loop loop
	set  chan struct{} // see Nudge

	// TestSignals report each round: how many timers it fired.
	TestSignals struct {
		Round testsignal.Signal[int]
	}
}

// NewTimerFirer returns a timer firer.
func NewTimerFirer(cfg TimerConfig) *TimerFirer {
	cfg.setDefaults()
	return &TimerFirer{cfg: cfg, set: make(chan struct{}, 1)}
}

// Nudge tells the firer that a timer was set (by this engine, or by
// another, as a store notification said), so that it recomputes its
// wait at once rather than after Interval.
func (s *TimerFirer) Nudge() {
	select {
	case s.set <- struct{}{}:
	default:
	}
}

// Start implements Service.
func (s *TimerFirer) Start(ctx context.Context) error {
	s.loop.start(ctx, s.run)
	return nil
}

// Stop implements Service.
func (s *TimerFirer) Stop() { s.loop.stop() }

func (s *TimerFirer) run(ctx context.Context) {
	c := s.cfg.Clock
	track := func(op string, err error) {
		s.cfg.Faults.Track(op, err, ctx.Err() != nil, c.Now())
		if err != nil && ctx.Err() == nil {
			s.cfg.Health.Failed(c.Now())
		}
	}
	for {
		wait := s.cfg.Interval
		n, err := s.FireDue(ctx)
		track("firing timers", err)
		next, ok, err := s.cfg.Store.NextTimer(ctx)
		track("reading the next timer", err)
		if ok {
			wait = min(wait, max(next.Sub(c.Now()), time.Millisecond))
		}
		s.TestSignals.Round.Signal(n)
		t := c.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.set:
		case <-t.C():
		}
		t.Stop()
	}
}

// FireDue fires every timer and run deadline that is due and returns
// how many fired. The firer calls it each round; a test Driver calls it
// directly.
//
// Run timers go first: a run whose deadline passed while its sleep
// ended too (the leader was down for both) fails rather than runs on.
func (s *TimerFirer) FireDue(ctx context.Context) (int, error) {
	total, err := s.fireRunTimers(ctx)
	if err != nil {
		return total, err
	}
	n, err := s.fireTimers(ctx)
	return total + n, err
}

// fireRunTimers starts every delayed run and fails every run whose
// deadline is due. (A round that fires a full batch of timers of runs
// that ended first acts on none, and leaves the rest to the next round,
// which NextTimer makes immediate.)
func (s *TimerFirer) fireRunTimers(ctx context.Context) (int, error) {
	total := 0
	for {
		fired, err := s.cfg.Store.FireRunTimers(ctx, s.cfg.Clock.Now(), timerBatch)
		if s.cfg.RunsFired != nil && len(fired) > 0 {
			s.cfg.RunsFired(ctx, fired)
		}
		total += len(fired)
		if err != nil || len(fired) < timerBatch {
			return total, err
		}
	}
}

// fireTimers fires every task timer that is due.
func (s *TimerFirer) fireTimers(ctx context.Context) (int, error) {
	total := 0
	for {
		now := s.cfg.Clock.Now()
		fired, err := s.cfg.Store.FireTimers(ctx, now, timerBatch)
		s.cfg.Metrics.TimersFired(ctx, fired, now)
		if s.cfg.Fired != nil {
			s.cfg.Fired(ctx, fired)
		}
		total += len(fired)
		if err != nil {
			return total, err
		}
		if len(fired) < timerBatch {
			return total, nil
		}
	}
}
