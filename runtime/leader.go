package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime/internal/executor"
	"github.com/effectivelabs/trellis/runtime/internal/leadership"
	"github.com/effectivelabs/trellis/runtime/internal/maintenance"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
)

// The leader's work (firing timers, recovering dead workers' tasks,
// housekeeping, stuck runs, retention) is done by the services of the
// maintenance package, started by its Maintainer while the leadership
// package says this engine leads. This file builds them from Config and
// gives them the engine's answers as funcs.

// leaderServices are the elector and the leader's services of an engine.
type leaderServices struct {
	elector    *leadership.Elector
	timers     *maintenance.TimerFirer // a Driver fires timers with it too
	maintainer *maintenance.Maintainer
}

func (e *Engine) newLeaderServices() leaderServices {
	cfg := &e.cfg
	health := &maintenance.StoreHealth{}
	timers := maintenance.NewTimerFirer(maintenance.TimerConfig{
		Interval: cfg.TimerInterval, Fired: e.afterTimers, RunsFired: e.afterRunTimers,
		Store: e.store, Clock: e.clock, Metrics: e.metrics, Faults: e.faults, Health: health,
	})
	services := []maintenance.Service{
		timers,
		maintenance.NewRecoverer(maintenance.RecoveryConfig{
			StaleAfter: cfg.StaleAfter, Every: cfg.HeartbeatInterval, Interval: cfg.TimerInterval,
			Store: e.store, Clock: e.clock, Log: e.log, Faults: e.faults, Health: health,
		}),
		maintenance.NewHousekeeper(maintenance.HousekeepingConfig{Store: e.store, Clock: e.clock, Log: e.log}),
		maintenance.NewPurger(e.retentionConfig()),
	}
	if cfg.StuckAfter > 0 {
		services = append(services, maintenance.NewStuckChecker(maintenance.StuckConfig{
			StuckAfter: cfg.StuckAfter, List: e.stuckReports, Clock: e.clock, Log: e.log, Faults: e.faults,
		}))
	}
	return leaderServices{
		elector: leadership.New(leadership.Config{
			Elector: e.store.Leadership(cfg.WorkerID), Interval: cfg.TimerInterval,
			Clock: e.clock, Log: e.log, Faults: e.faults,
		}),
		timers:     timers,
		maintainer: maintenance.NewMaintainer(services...),
	}
}

// start starts seeking leadership, and the services whenever this
// engine leads, until ctx ends or stop.
func (l leaderServices) start(ctx context.Context) {
	leading := l.elector.Subscribe()
	_ = l.maintainer.Start(ctx, leading)
	_ = l.elector.Start(ctx)
}

// stop stops the services, then resigns leadership.
func (l leaderServices) stop() {
	l.maintainer.Stop()
	l.elector.Stop()
}

// retentionConfig is the purger's configuration: Config.Retention.
func (e *Engine) retentionConfig() maintenance.RetentionConfig {
	r := e.cfg.Retention
	rc := maintenance.RetentionConfig{
		Interval: r.Interval, BatchSize: r.BatchSize,
		PurgeRuns: func(ctx context.Context, status store.RunStatus, before time.Time, goingOn func() bool) (int, error) {
			return e.purge(ctx, store.Purge{Status: status, FinishedBefore: before}, goingOn)
		},
		Store: e.store, Clock: e.clock, Log: e.log,
	}
	for _, st := range FinishedStatuses() {
		if age, ok := r.Age(st); ok {
			rc.Ages = append(rc.Ages, maintenance.StatusAge{Status: st, Age: age})
		}
	}
	if age, ok := r.eventsAge(); ok {
		rc.EventsAge = age
	}
	return rc
}

// stuckReports lists the stuck runs as the leader logs them.
func (e *Engine) stuckReports(ctx context.Context) ([]maintenance.StuckRun, error) {
	runs, err := e.StuckRuns(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]maintenance.StuckRun, len(runs))
	for i, r := range runs {
		parts := make([]string, len(r.Tasks))
		for j, t := range r.Tasks {
			parts[j] = fmt.Sprintf("%s %s since %s", t.Step, t.Status, t.Since.UTC().Format(time.RFC3339))
			if t.Worker != "" {
				parts[j] += " on worker " + t.Worker
			}
		}
		out[i] = maintenance.StuckRun{ID: r.ID, Workflow: r.Workflow, Tenant: r.Tenant, Since: r.Tasks[0].Since, Tasks: parts}
	}
	return out, nil
}

// afterTimers does for the sleep steps FireTimers completed what
// the executor does for results: it counts them and their finished runs,
// and wakes whoever waits on those runs and the claim loop (children may
// be queued).
func (e *Engine) afterTimers(ctx context.Context, fired []store.FiredTimer) {
	completed := false
	for _, t := range fired {
		if !t.Completed {
			continue
		}
		completed = true
		if e.metrics != nil {
			step := fmt.Sprintf("step %d", t.Key.Step)
			if def, err := e.definition(ctx, t.Version); err == nil && t.Key.Step < len(def.graph.Steps) {
				step = def.graph.Steps[t.Key.Step].Name
			}
			e.metrics.TaskEnded(ctx, t.Workflow, step, t.Tenant, telemetry.OutcomeCompleted)
			if t.RunFinished {
				e.metrics.RunFinished(ctx, t.Workflow, t.Tenant, telemetry.OutcomeCompleted)
			}
		}
		if t.RunFinished {
			e.waiters.runFinished(t.Key.Run)
		}
	}
	if completed {
		e.wake()
	}
}

// afterRunTimers does for the runs whose deadline failed them what the
// executor does for failed runs: it counts them and wakes whoever waits
// on them; and it wakes the claim loop (delayed runs' roots and failure
// handlers are queued).
func (e *Engine) afterRunTimers(ctx context.Context, fired []store.FiredRunTimer) {
	for _, r := range fired {
		if !r.Started {
			e.metrics.RunFinished(ctx, r.Workflow, r.Tenant, telemetry.OutcomeFailed)
			e.waiters.runFinished(r.ID)
		}
	}
	if len(fired) > 0 {
		e.wake()
	}
}

// endCause says why a run ended: the cause its running steps' contexts
// see. When its deadline passed, that matches context.DeadlineExceeded;
// when it ended otherwise, it is executor.ErrRunEnded. It is nil for a
// run still running, and when the run cannot be read.
func (e *Engine) endCause(ctx context.Context, id RunID) error {
	run, err := e.store.GetRun(ctx, id)
	if err != nil {
		e.log.Debug("reading why a run ended", "run", id, "error", err)
		return nil // the cause is a nicety: the steps stop with ErrRunEnded
	}
	if run.Status == store.RunRunning {
		return nil
	}
	if run.Status != store.RunFailed || run.Failure == nil || run.Failure.StepIndex >= 0 {
		return executor.ErrRunEnded
	}
	return fmt.Errorf("%s: %w", run.Failure.Error, context.DeadlineExceeded)
}
