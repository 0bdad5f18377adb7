package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/testsignal"
	"github.com/effectivelabs/trellis/runtime/store"
)

// HousekeepingConfig configures a Housekeeper.
type HousekeepingConfig struct {
	// Interval is how often the store's housekeeping runs (default 5s).
	Interval time.Duration

	Store store.Store
	Clock clock.Clock
	Log   *slog.Logger
}

func (c *HousekeepingConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
}

// Housekeeper runs the store's housekeeping (store.Store.Maintain). It is
// a service of its own so that slow housekeeping (a vacuum) never delays
// the timers the leader fires.
type Housekeeper struct {
	cfg    HousekeepingConfig
	loop   loop
	warned bool // only run's goroutine touches it, one at a time

	// TestSignals report each round, with its error.
	TestSignals struct {
		Round testsignal.Signal[error]
	}
}

// NewHousekeeper returns a housekeeper.
func NewHousekeeper(cfg HousekeepingConfig) *Housekeeper {
	cfg.setDefaults()
	return &Housekeeper{cfg: cfg}
}

// Start implements Service.
func (s *Housekeeper) Start(ctx context.Context) error {
	s.loop.start(ctx, s.run)
	return nil
}

// Stop implements Service.
func (s *Housekeeper) Stop() { s.loop.stop() }

func (s *Housekeeper) run(ctx context.Context) {
	for clock.Sleep(ctx, s.cfg.Clock, s.cfg.Interval) == nil {
		err := s.cfg.Store.Maintain(ctx, s.cfg.Clock.Now())
		if err != nil && ctx.Err() == nil && !s.warned {
			s.cfg.Log.Warn("store maintenance failed; queue scans will slow down until autovacuum runs", "error", err)
			s.warned = true
		}
		s.TestSignals.Round.Signal(err)
	}
}
