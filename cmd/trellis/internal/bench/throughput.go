package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
)

// Modes of a throughput case.
const (
	// ModeBurnDown: the runs are inserted first, then the workers start;
	// measured from the first STARTED event to the last COMPLETED one.
	ModeBurnDown = "burn-down"
	// ModeSteady: the workers run while an inserter keeps the backlog
	// bounded; measured over a window after a warm-up.
	ModeSteady = "steady"
	// ModePaced: the workers run while an inserter adds runs at
	// pacedLoad of the rate the same workers burned down at: a busy
	// system that keeps up, where waits are not backlog.
	ModePaced = "paced"
)

// pacedLoad is the paced cases' load: the fraction of the burn-down rate
// the inserter adds runs at.
const pacedLoad = 0.7

// Stores of a throughput case.
const (
	StorePostgres = "postgres"
	StoreMemory   = "memory"
)

// Throughput is one throughput case.
type Throughput struct {
	Store    string `json:"store"`
	Workflow string `json:"workflow"`
	Mode     string `json:"mode"`
	// Workers is the number of worker processes (0: the memory store's
	// in-process engine).
	Workers int `json:"workers"`
	// Runs and Tasks are what completed in the measured window.
	Runs  int `json:"runs"`
	Tasks int `json:"tasks"`
	// Elapsed is the measured window.
	Elapsed     time.Duration `json:"elapsed_ns"`
	TasksPerSec float64       `json:"tasks_per_sec"`
	RunsPerSec  float64       `json:"runs_per_sec"`
	// InsertedPerSec is how fast the runs were inserted (burn-down: with
	// TriggerMany before the workers started).
	InsertedPerSec float64 `json:"inserted_per_sec,omitempty"`
	// WALPerTask is the write-ahead log Postgres wrote while the workers
	// ran a burn-down, per task (the whole server's: measure on a quiet
	// one).
	WALPerTask float64 `json:"wal_bytes_per_task,omitempty"`
	// DBCPUPerTask is the CPU time the PostgreSQL processes on this
	// machine used while the workers ran a burn-down, per task; zero when
	// the server runs elsewhere (see serverCPU).
	DBCPUPerTask time.Duration `json:"db_cpu_per_task_ns,omitempty"`
	// WorkerCPUPerTask is the CPU time the worker processes used in a
	// burn-down, from their start to its end, per task.
	WorkerCPUPerTask time.Duration `json:"worker_cpu_per_task_ns,omitempty"`
	// MinBacklog is the fewest unfinished runs the steady inserter saw
	// in the measured window, before topping the backlog up to its bound
	// (Options.MaxBacklog): 0 means the workers ran out of work.
	MinBacklog int `json:"min_backlog,omitempty"`
	// Notes are worker log lines of level WARN or ERROR, and anything
	// else odd.
	Notes []string `json:"notes,omitempty"`
}

// RunThroughput runs the Postgres throughput cases: chain-5 and diamond-6,
// burn-down and steady, with each of o.Workers worker processes. The
// steady cases also measure hand-off latency under load.
func RunThroughput(ctx context.Context, o Options) ([]Throughput, []Latency, error) {
	var out []Throughput
	var lat []Latency
	var errs []error
	for _, sh := range []shape{chainShape(), diamondShape()} {
		burned := map[int]float64{} // runs/s by workers
		for _, w := range o.Workers {
			t, err := BurnDown(ctx, o, sh.label, w)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s burn-down with %d workers: %w", sh.label, w, err))
			} else {
				out = append(out, t)
				burned[w] = t.RunsPerSec
			}
			if ctx.Err() != nil {
				return out, lat, errors.Join(errs...)
			}
		}
		for _, w := range o.Workers {
			if burned[w] <= 0 {
				continue
			}
			t, l, err := steady(ctx, o, sh, w, pacedLoad*burned[w])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s paced with %d workers: %w", sh.label, w, err))
			} else {
				out = append(out, t)
				lat = append(lat, l)
			}
			if ctx.Err() != nil {
				return out, lat, errors.Join(errs...)
			}
		}
		for _, w := range o.Workers {
			t, l, err := Steady(ctx, o, sh.label, w)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s steady with %d workers: %w", sh.label, w, err))
			} else {
				out = append(out, t)
				lat = append(lat, l)
			}
			if ctx.Err() != nil {
				return out, lat, errors.Join(errs...)
			}
		}
	}
	return out, lat, errors.Join(errs...)
}

// shapeByLabel returns the throughput workflow with a label.
func shapeByLabel(label string) (shape, error) {
	for _, s := range []shape{chainShape(), diamondShape()} {
		if s.label == label {
			return s, nil
		}
	}
	return shape{}, fmt.Errorf("no throughput workflow %q (use %s or %s)", label, ChainLabel, DiamondLabel)
}

// BurnDown inserts o.Runs runs of a workflow (ChainLabel or
// DiamondLabel), then starts workers processes and measures how fast they
// work through them.
func BurnDown(ctx context.Context, o Options, workflow string, workers int) (res Throughput, err error) {
	sh, err := shapeByLabel(workflow)
	if err != nil {
		return res, err
	}
	insert := func(ctx context.Context, wf *runtime.Workflow) error { return insertRuns(ctx, wf, o.Runs) }
	return burnDown(ctx, o, ScenarioThroughput, sh, workers, insert, nil)
}

// burnDown is BurnDown of a shape whose o.Runs runs insert creates; then
// report, when not nil, may add to the result from the case's database.
func burnDown(ctx context.Context, o Options, scenario string, sh shape, workers int,
	insert func(context.Context, *runtime.Workflow) error, report func(context.Context, *pgxpool.Pool, window, *Throughput) error,
) (res Throughput, err error) {
	log := o.logger().With("scenario", scenario, "workflow", sh.label, "mode", ModeBurnDown, "workers", workers)
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	log.Info("inserting runs", "runs", o.Runs)
	t0 := time.Now()
	if err := insert(ctx, c.workflow(sh)); err != nil {
		return res, err
	}
	inserted := time.Since(t0)
	log.Info("working", "runs", o.Runs)
	meter, err := startCost(ctx, c.db.pool)
	if err != nil {
		return res, err
	}
	if err := c.startWorkers(ctx, workers); err != nil {
		return res, err
	}
	total := o.Runs * sh.tasks()
	if err := c.waitRunsDone(ctx, total); err != nil {
		return res, err
	}
	cost, _, err := meter.lap(ctx, total)
	if err != nil {
		return res, err
	}
	workerCPU, _ := c.workers.cpu()
	if err := c.stopWorkers(); err != nil {
		return res, err
	}
	if err := checkAllCompleted(ctx, c.db.pool); err != nil {
		return res, err
	}
	w, err := burnWindow(ctx, c.db.pool)
	if err != nil {
		return res, err
	}
	if w.completed != total {
		return res, fmt.Errorf("%d COMPLETED events for %d tasks", w.completed, total)
	}
	res = Throughput{
		Store: StorePostgres, Workflow: sh.label, Mode: ModeBurnDown, Workers: workers,
		Runs: o.Runs, Tasks: total, Elapsed: w.elapsed(),
		TasksPerSec: perSecond(total, w.elapsed()), RunsPerSec: perSecond(o.Runs, w.elapsed()),
		InsertedPerSec: perSecond(o.Runs, inserted), WALPerTask: cost.WAL, DBCPUPerTask: cost.DBCPU, Notes: c.notes,
		WorkerCPUPerTask: workerCPU / time.Duration(total),
	}
	if report != nil {
		if err := report(ctx, c.db.pool, w, &res); err != nil {
			return res, err
		}
	}
	log.Info("done", "tasks/s", int(res.TasksPerSec), "elapsed", res.Elapsed.Round(time.Millisecond))
	return res, nil
}

// steadyPoll is how often the steady inserter checks the backlog.
const steadyPoll = 50 * time.Millisecond

// Steady runs workers processes for o.SteadyDuration while inserting runs
// of a workflow so that at most o.MaxBacklog are unfinished, and measures
// throughput and hand-off latency after o.SteadyWarmup.
func Steady(ctx context.Context, o Options, workflow string, workers int) (res Throughput, lat Latency, err error) {
	sh, err := shapeByLabel(workflow)
	if err != nil {
		return res, lat, err
	}
	return steady(ctx, o, sh, workers, 0)
}

// steady is Steady when rate is zero. Otherwise it is a paced case: it
// inserts runs at rate runs/s, whatever the backlog, and measures the
// same.
func steady(ctx context.Context, o Options, sh shape, workers int, rate float64) (res Throughput, lat Latency, err error) {
	mode, latCase := ModeSteady, LatencySteady
	if rate > 0 {
		mode, latCase = ModePaced, LatencyPaced
	}
	log := o.logger().With("scenario", "throughput", "workflow", sh.label, "mode", mode, "workers", workers)
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return res, lat, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	if err := c.startWorkers(ctx, workers); err != nil {
		return res, lat, err
	}
	log.Info("working", "duration", o.SteadyDuration, "max backlog", o.MaxBacklog, "runs/s", int(rate))
	begin := time.Now()
	from, to := begin.Add(o.SteadyWarmup), begin.Add(o.SteadyDuration)
	wf := c.workflow(sh)
	minBacklog, inserted := -1, 0
	for now := time.Now(); now.Before(to); now = time.Now() {
		backlog, err := unfinishedRuns(ctx, c.db.pool)
		if err != nil {
			return res, lat, err
		}
		if !now.Before(from) && (minBacklog < 0 || backlog < minBacklog) {
			minBacklog = backlog
		}
		room := o.MaxBacklog - backlog
		if rate > 0 {
			// Paced: as many as the rate says by now, whatever the backlog.
			room = int(rate*now.Sub(begin).Seconds()) - inserted
		}
		if room > 0 {
			if err := insertRuns(ctx, wf, room); err != nil {
				return res, lat, err
			}
			inserted += room
		}
		if err := sleepCtx(ctx, steadyPoll); err != nil {
			return res, lat, err
		}
	}
	if err := c.stopWorkers(); err != nil {
		return res, lat, err
	}
	tasks, err := countEvents(ctx, c.db.pool, "COMPLETED", from, to)
	if err != nil {
		return res, lat, err
	}
	runs, err := countFinishedRuns(ctx, c.db.pool, from, to)
	if err != nil {
		return res, lat, err
	}
	events, err := loadTaskEvents(ctx, c.db.pool, sh.spec.Name)
	if err != nil {
		return res, lat, err
	}
	durations, err := runDurations(ctx, c.db.pool, sh.spec.Name, from, to)
	if err != nil {
		return res, lat, err
	}
	window := to.Sub(from)
	res = Throughput{
		Store: StorePostgres, Workflow: sh.label, Mode: mode, Workers: workers,
		Runs: runs, Tasks: tasks, Elapsed: window,
		TasksPerSec: perSecond(tasks, window), RunsPerSec: perSecond(runs, window),
		MinBacklog: max(minBacklog, 0), Notes: c.notes, InsertedPerSec: rate,
	}
	lat = Latency{
		Case: latCase, Workflow: sh.label, Workers: workers,
		Handoffs: percentiles(handoffs(events, sh.parents, from, to)),
		Runs:     percentiles(durations),
	}
	log.Info("done", "tasks/s", int(res.TasksPerSec), "p50", lat.Handoffs.P50)
	return res, lat, nil
}
