package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/internal/testsignal"
	"github.com/effectivelabs/trellis/runtime/store"
)

// RecoveryConfig configures a Recoverer.
type RecoveryConfig struct {
	// StaleAfter is how long a worker goes without a heartbeat before it
	// is presumed dead (default 30s).
	StaleAfter time.Duration
	// Every is how often dead workers' tasks are looked for (default 5s,
	// the heartbeat interval).
	Every time.Duration
	// Interval is how often the recoverer checks whether it is time to
	// (default 1s).
	Interval time.Duration

	Store  store.Store
	Clock  clock.Clock
	Log    *slog.Logger
	Faults *telemetry.Faults
	// Health says how long the store has answered the leader; the
	// recoverer tells it of its own failures too.
	Health *StoreHealth
}

func (c *RecoveryConfig) setDefaults() {
	if c.StaleAfter <= 0 {
		c.StaleAfter = 30 * time.Second
	}
	if c.Every <= 0 {
		c.Every = 5 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
}

// recoverBatch is the most tasks one store call recovers.
const recoverBatch = 1000

// Recoverer re-queues (or fails, when out of attempts) the running tasks
// of workers that stopped heartbeating more than StaleAfter ago.
//
// It recovers tasks only once this engine has led, with the store
// answering, for StaleAfter: a worker is dead when it has not heartbeated
// for StaleAfter while the database was up. After an outage no worker
// could heartbeat, and all would look dead to a leader that did not give
// them that long to say otherwise (two heartbeat intervals were not
// enough: a worker's pool may take longer to reconnect, and its tasks
// then ran twice).
type Recoverer struct {
	cfg  RecoveryConfig
	loop loop

	// TestSignals report each recovery: how many tasks it requeued or
	// failed.
	TestSignals struct {
		Recovered testsignal.Signal[int]
	}
}

// NewRecoverer returns a recoverer.
func NewRecoverer(cfg RecoveryConfig) *Recoverer {
	cfg.setDefaults()
	return &Recoverer{cfg: cfg}
}

// Start implements Service. The store counts as steady from now: this
// engine has just begun to lead.
func (s *Recoverer) Start(ctx context.Context) error {
	s.cfg.Health.Failed(s.cfg.Clock.Now())
	s.loop.start(ctx, s.run)
	return nil
}

// Stop implements Service.
func (s *Recoverer) Stop() { s.loop.stop() }

func (s *Recoverer) run(ctx context.Context) {
	c := s.cfg.Clock
	var next time.Time
	for clock.Sleep(ctx, c, s.cfg.Interval) == nil {
		now := c.Now()
		if now.Sub(s.cfg.Health.Since()) < s.cfg.StaleAfter || now.Before(next) {
			continue
		}
		res, err := s.RecoverDead(ctx)
		s.cfg.Faults.Track("recovering tasks", err, ctx.Err() != nil, c.Now())
		if err != nil && ctx.Err() == nil {
			s.cfg.Health.Failed(c.Now())
		}
		next = now.Add(s.cfg.Every)
		s.TestSignals.Recovered.Signal(len(res.Requeued) + len(res.Failed))
	}
}

// RecoverDead recovers the tasks of workers that have not heartbeated
// for StaleAfter, a batch at a time.
func (s *Recoverer) RecoverDead(ctx context.Context) (store.RecoverResult, error) {
	var total store.RecoverResult
	for {
		now := s.cfg.Clock.Now()
		res, err := s.cfg.Store.RecoverTasks(ctx, store.Recover{StaleBefore: now.Add(-s.cfg.StaleAfter), Limit: recoverBatch, Now: now})
		total.Requeued = append(total.Requeued, res.Requeued...)
		total.Failed = append(total.Failed, res.Failed...)
		if err != nil {
			return total, err
		}
		if n := len(res.Requeued) + len(res.Failed); n > 0 {
			s.cfg.Log.Info("recovered tasks of dead workers", "requeued", len(res.Requeued), "failed", len(res.Failed))
		}
		if len(res.Requeued)+len(res.Failed) < recoverBatch {
			return total, nil
		}
	}
}
