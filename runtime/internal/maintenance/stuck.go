package maintenance

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/internal/testsignal"
)

// StuckConfig configures a StuckChecker.
type StuckConfig struct {
	// StuckAfter is how long a run may make no progress before it is
	// logged (required: a positive duration).
	StuckAfter time.Duration
	// List lists the stuck runs (Engine.StuckRuns), as the log names
	// them.
	List func(ctx context.Context) ([]StuckRun, error)

	Clock  clock.Clock
	Log    *slog.Logger
	Faults *telemetry.Faults
}

// StuckRun is what the log says of a stuck run.
type StuckRun struct {
	ID               uuid.UUID
	Workflow, Tenant string
	// Since is when its oldest task stopped making progress.
	Since time.Time
	// Tasks say which tasks hold it up, one phrase each.
	Tasks []string
}

// interval is how often the checker looks for stuck runs.
func (c *StuckConfig) interval() time.Duration {
	return min(max(c.StuckAfter/2, time.Second), time.Minute)
}

// StuckChecker logs the runs that make no progress: each run at most
// once per StuckAfter, so that a run that stays stuck is reminded of,
// not spammed.
type StuckChecker struct {
	cfg  StuckConfig
	loop loop
	// Only run's goroutine touches these, one term at a time.
	logged map[uuid.UUID]time.Time
	next   time.Time // when to check next

	// TestSignals report each check: how many stuck runs it found.
	TestSignals struct {
		Checked testsignal.Signal[int]
	}
}

// NewStuckChecker returns a stuck checker.
func NewStuckChecker(cfg StuckConfig) *StuckChecker {
	return &StuckChecker{cfg: cfg}
}

// Start implements Service.
func (s *StuckChecker) Start(ctx context.Context) error {
	s.loop.start(ctx, s.run)
	return nil
}

// Stop implements Service.
func (s *StuckChecker) Stop() { s.loop.stop() }

// stuckTick is how often the checker looks at the clock: it checks at
// its first tick as leader, then once per interval, however often this
// engine gains and loses leadership meanwhile.
const stuckTick = 5 * time.Second

func (s *StuckChecker) run(ctx context.Context) {
	for clock.Sleep(ctx, s.cfg.Clock, min(stuckTick, s.cfg.interval())) == nil {
		if now := s.cfg.Clock.Now(); !now.Before(s.next) {
			s.next = now.Add(s.cfg.interval())
			s.check(ctx)
		}
	}
}

func (s *StuckChecker) check(ctx context.Context) {
	now := s.cfg.Clock.Now()
	runs, err := s.cfg.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Faults.Failed("looking for stuck runs", err, now)
		}
		return
	}
	s.cfg.Faults.OK("looking for stuck runs", now)
	seen := make(map[uuid.UUID]time.Time, len(runs))
	for _, r := range runs {
		last, ok := s.logged[r.ID]
		if ok && now.Sub(last) < s.cfg.StuckAfter {
			seen[r.ID] = last
			continue
		}
		seen[r.ID] = now
		s.cfg.Log.Warn("run making no progress", telemetry.KeyRunID, r.ID.String(), telemetry.KeyWorkflow, r.Workflow, telemetry.KeyTenant, r.Tenant,
			"for", now.Sub(r.Since).Round(time.Second), "tasks", strings.Join(r.Tasks, "; "))
	}
	s.logged = seen
	s.TestSignals.Checked.Signal(len(runs))
}
