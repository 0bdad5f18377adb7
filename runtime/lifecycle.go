package runtime

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/metric"

	"github.com/effectivelabs/trellis/runtime/store"
)

// lifecycle holds what a started engine runs besides its components:
// the loops that follow the store's notifications and fire cron
// schedules, and the metric gauges.
type lifecycle struct {
	cancel context.CancelFunc // stops the loops
	loops  sync.WaitGroup
	gauges metric.Registration // the metric gauges' callback; nil without metrics
}

// Start begins executing: claiming ready tasks of registered workflows,
// heartbeating, and taking part in leader election for firing timers,
// recovering tasks of dead workers and deleting finished runs past their
// retention (Config.Retention). It returns at once. Cancelling ctx
// stops the engine abruptly; use Stop for a graceful shutdown.
func (e *Engine) Start(ctx context.Context) error {
	if err := e.mode.reserveStart(); err != nil {
		return err
	}
	e.registry.close() // Register refuses from now on
	lc, err := e.startLoops(ctx)
	if err != nil {
		e.registry.reopen()
		e.mode.startFailed()
		return err
	}
	e.mode.startDone(lc)
	e.log.Info("engine started", "workflows", e.registry.workflowNames(), "concurrency", e.cfg.Concurrency)
	return nil
}

// startLoops says this worker is alive, subscribes to wake-ups and starts
// the components: the executor, leadership and the leader's services,
// and the loops. A database that is briefly down (restarting) is waited
// for.
func (e *Engine) startLoops(ctx context.Context) (*lifecycle, error) {
	started := e.clock.Now()
	// Say we are alive before claiming anything.
	err := retryTransient(ctx, e.clock, func() error {
		_, err := e.store.Heartbeat(ctx, e.cfg.WorkerID, e.clock.Now())
		return err
	})
	if err == nil {
		// Find the stored versions the registered code can run, then say
		// what we serve (serving.go): claims take only those. A failure
		// leaves the registered versions served, and the next refresh
		// tries again.
		if rerr := retryTransient(ctx, e.clock, func() error {
			_, err := e.refreshServed(ctx)
			return err
		}); rerr != nil {
			e.log.Warn("finding the stored workflow versions the registered code can run failed", "error", rerr)
		}

		// Say what we serve and our labels, for claims' sake and for
		// operators (trellis workers, the dashboard).
		err = retryTransient(ctx, e.clock, func() error { return e.announce(ctx) })
	}
	if err != nil {
		return nil, fmt.Errorf("engine: registering worker: %w", err)
	}
	// Workflows that events start are stored now, so that a process that
	// publishes their events without their code finds them.
	for _, r := range e.registry.registrations() {
		if len(r.def.startOn) > 0 {
			if err := e.saveDefinition(ctx, r.def); err != nil {
				return nil, fmt.Errorf("engine: %w", err)
			}
		}
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
	lc := &lifecycle{cancel: cancel, gauges: gauges}
	e.exec.Start(loopCtx, started)
	lc.loops.Add(3)
	go func() { defer lc.loops.Done(); e.listenLoop(notes) }()
	go func() { defer lc.loops.Done(); e.cron.loop(loopCtx) }()
	go func() { defer lc.loops.Done(); e.servingLoop(loopCtx) }()
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
	lc := e.mode.beginStop()
	if lc == nil {
		return nil
	}

	err := e.exec.Stop(ctx)
	lc.cancel()
	e.leading.stop()
	lc.loops.Wait()
	if lc.gauges != nil {
		if uerr := lc.gauges.Unregister(); uerr != nil {
			e.log.Warn("unregistering the metric gauges", "error", uerr)
		}
	}
	e.log.Info("engine stopped")
	return err
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
			e.exec.StopRun(n.Run)
			e.waiters.runFinished(n.Run)
		}
	}
}
