package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Cases of a latency figure.
const (
	// LatencyIdle: one worker, runs triggered one at a time.
	LatencyIdle = "idle"
	// LatencySteady: under a steady throughput case's load.
	LatencySteady = "steady"
	// LatencyPaced: under a paced throughput case's load (pacedLoad of
	// the burn-down rate).
	LatencyPaced = "paced"
)

// Latency is the hand-off latency of one case: for every task with
// parents, its STARTED event time minus the latest COMPLETED or SKIPPED
// event time among its parents (zero for a task the store handed to the
// worker as it recorded the parent: both events are stamped together);
// and the runs' durations, from creation to their end, which hand-offs
// shorten.
type Latency struct {
	Case     string      `json:"case"`
	Workflow string      `json:"workflow"`
	Workers  int         `json:"workers"`
	Handoffs Percentiles `json:"handoffs"`
	Runs     Percentiles `json:"runs"`
	// EndToEnd, for the idle case only, is what the client waits: from
	// the call that triggers a run to its result in hand, measured by the
	// harness's own clock. Unlike Runs, read from the event log's times,
	// it counts the trigger's round trip and the news of the run's end
	// reaching the client.
	EndToEnd Percentiles `json:"endToEnd,omitzero"`
	Notes    []string    `json:"notes,omitempty"`
}

// RunLatency measures hand-off latency on an otherwise idle system: one
// worker process, o.LatencyRuns chain-5 runs triggered one at a time,
// each waited for before the next.
func RunLatency(ctx context.Context, o Options) (lat Latency, err error) {
	sh := chainShape()
	log := o.logger().With("scenario", "latency", "workflow", sh.label)
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return lat, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	// The harness waits through an engine of its own that is started (so
	// that it hears runs finish through LISTEN instead of polling) but
	// registers nothing, so it executes nothing.
	waiter, err := runtime.New(runtime.Config{Store: pgstore.New(c.db.pool), WorkerID: "bench-harness"})
	if err != nil {
		return lat, fmt.Errorf("creating the harness engine: %w", err)
	}
	wf, err := waiter.Workflow(sh.spec)
	if err != nil {
		return lat, err
	}
	if err := c.startWorkers(ctx, 1); err != nil {
		return lat, err
	}
	if err := waiter.Start(ctx); err != nil {
		return lat, fmt.Errorf("starting the harness engine: %w", err)
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, waiter.Stop(stop))
	}()
	log.Info("running one at a time", "runs", o.LatencyRuns)
	waits := make([]time.Duration, 0, o.LatencyRuns)
	for range o.LatencyRuns {
		at := time.Now()
		if _, err := wf.Run(ctx, nil); err != nil {
			return lat, fmt.Errorf("running %s: %w", sh.label, err)
		}
		waits = append(waits, time.Since(at))
	}
	if err := c.stopWorkers(); err != nil {
		return lat, err
	}
	events, err := loadTaskEvents(ctx, c.db.pool, sh.spec.Name)
	if err != nil {
		return lat, err
	}
	runs, err := runDurations(ctx, c.db.pool, sh.spec.Name, time.Time{}, time.Now()) // every run: they all ended
	if err != nil {
		return lat, err
	}
	lat = Latency{Case: LatencyIdle, Workflow: sh.label, Workers: 1,
		Handoffs: percentiles(handoffs(events, sh.parents, time.Time{}, time.Time{})), Runs: percentiles(runs),
		EndToEnd: percentiles(waits), Notes: c.notes}
	if want := o.LatencyRuns * (sh.tasks() - 1); lat.Handoffs.Count != want {
		return lat, fmt.Errorf("%d hand-offs in the event log, want %d", lat.Handoffs.Count, want)
	}
	log.Info("done", "p50", lat.Handoffs.P50)
	return lat, nil
}
