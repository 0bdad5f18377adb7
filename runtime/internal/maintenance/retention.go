package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/testsignal"
	"github.com/effectivelabs/trellis/runtime/store"
)

// RetentionConfig configures a Purger.
type RetentionConfig struct {
	// Interval is how often finished runs are purged (default 1 minute).
	Interval time.Duration
	// Ages are how long the runs of each finished status are kept, in
	// the order they are purged; a status kept forever is left out.
	Ages []StatusAge
	// EventsAge is how long events sent with a key are kept; 0 keeps
	// them forever.
	EventsAge time.Duration
	// BatchSize is the most events one statement deletes (default 1000).
	BatchSize int
	// PurgeRuns deletes the runs of status that finished before
	// finishedBefore, a batch at a time while goingOn says so, and
	// returns how many it deleted (Engine.PurgeRuns).
	PurgeRuns func(ctx context.Context, status store.RunStatus, finishedBefore time.Time, goingOn func() bool) (int, error)

	Store store.Store
	Clock clock.Clock
	Log   *slog.Logger
}

// StatusAge is how long the runs of a finished status are kept.
type StatusAge struct {
	Status store.RunStatus
	Age    time.Duration
}

func (c *RetentionConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = time.Minute
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
}

// purges reports whether anything is ever deleted.
func (c *RetentionConfig) purges() bool { return len(c.Ages) > 0 || c.EventsAge > 0 }

// Purger deletes, every Interval, the finished runs past their
// retention and the events sent with a key past theirs. A failure is
// logged once (at Warn) until a purge works again; the next interval
// retries. It is a service of its own so that a long purge (a large
// backlog, a batch at a time) delays neither the timers the leader fires
// nor its housekeeping.
type Purger struct {
	cfg     RetentionConfig
	loop    loop
	failing bool // only run's goroutine touches it

	// TestSignals report each purge, with its error.
	TestSignals struct {
		Purged testsignal.Signal[error]
	}
}

// NewPurger returns a purger.
func NewPurger(cfg RetentionConfig) *Purger {
	cfg.setDefaults()
	return &Purger{cfg: cfg}
}

// Start implements Service.
func (s *Purger) Start(ctx context.Context) error {
	if s.cfg.purges() {
		s.loop.start(ctx, s.run)
	}
	return nil
}

// Stop implements Service.
func (s *Purger) Stop() { s.loop.stop() }

func (s *Purger) run(ctx context.Context) {
	for clock.Sleep(ctx, s.cfg.Clock, s.cfg.Interval) == nil {
		err := s.purgeExpired(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !s.failing:
			s.failing = true
			s.cfg.Log.Warn("purging finished runs failed; retrying every interval", "error", err, "interval", s.cfg.Interval)
		case err == nil && s.failing:
			s.failing = false
			s.cfg.Log.Info("purging finished runs works again")
		}
		s.TestSignals.Purged.Signal(err)
	}
}

// purgeExpired deletes, for each status not kept forever, the runs that
// finished longer ago than they are kept, then the expired events, and
// logs what it deleted.
func (s *Purger) purgeExpired(ctx context.Context) error {
	c := s.cfg.Clock
	began := c.Now()
	var deleted []any
	total := 0
	goingOn := func() bool { return ctx.Err() == nil }
	for _, a := range s.cfg.Ages {
		if !goingOn() {
			break
		}
		n, err := s.cfg.PurgeRuns(ctx, a.Status, c.Now().Add(-a.Age), goingOn)
		if n > 0 {
			deleted = append(deleted, strings.ToLower(string(a.Status)), n)
			total += n
		}
		if err != nil {
			s.logPurged(total, deleted, began)
			return err
		}
	}
	if s.cfg.EventsAge > 0 && goingOn() {
		n, err := s.purgeEvents(ctx, c.Now().Add(-s.cfg.EventsAge))
		if n > 0 {
			deleted = append(deleted, "events", n)
		}
		if err != nil {
			s.logPurged(total, deleted, began)
			return err
		}
	}
	s.logPurged(total, deleted, began)
	return nil
}

// purgeEvents deletes the events sent with a key before sentBefore, a
// batch at a time, pausing after each full batch as long as it took.
func (s *Purger) purgeEvents(ctx context.Context, sentBefore time.Time) (int, error) {
	c := s.cfg.Clock
	total := 0
	for ctx.Err() == nil {
		began := c.Now()
		n, err := s.cfg.Store.PurgeEvents(ctx, sentBefore, s.cfg.BatchSize)
		if err != nil {
			return total, fmt.Errorf("purging events: %w", err)
		}
		total += n
		if n < s.cfg.BatchSize {
			break
		}
		if err := clock.Sleep(ctx, c, c.Now().Sub(began)); err != nil {
			return total, err
		}
	}
	return total, nil
}

// logPurged logs a summary of a purge that deleted runs: how many of
// each status, and how long it took.
func (s *Purger) logPurged(total int, deleted []any, began time.Time) {
	if len(deleted) == 0 {
		return
	}
	args := append([]any{"runs", total}, deleted...)
	s.cfg.Log.Info("purged finished runs past their retention", append(args, "took", s.cfg.Clock.Now().Sub(began))...)
}
