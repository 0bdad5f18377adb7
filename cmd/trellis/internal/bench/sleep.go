package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Sleep is what durable sleeps cost: o.Sleepers runs whose first step
// sleeps o.Sleep, then a no-op step, executed by an engine in the
// harness process.
type Sleep struct {
	Sleepers int           `json:"sleepers"`
	Sleep    time.Duration `json:"sleep_ns"`
	// Insert is how long triggering every run took (TriggerMany, engine
	// running); Asleep how long from the first trigger until every sleep
	// step slept.
	Insert time.Duration `json:"insert_ns"`
	Asleep time.Duration `json:"asleep_ns"`
	// MostAsleep is the most runs asleep at once: Sleepers, unless the
	// first woke before the last fell asleep (then raise the sleep).
	MostAsleep int `json:"most_asleep"`
	// Goroutines and live heap (after runtime.GC) of the process: with the
	// engine started and idle, and with every run asleep.
	IdleGoroutines   int    `json:"idle_goroutines"`
	AsleepGoroutines int    `json:"asleep_goroutines"`
	IdleHeap         uint64 `json:"idle_heap_bytes"`
	AsleepHeap       uint64 `json:"asleep_heap_bytes"`
	// TableBytes is the size of the schema's trellis tables (with indexes
	// and TOAST) with every run asleep; BytesPerRun divides it by the runs.
	TableBytes  int64   `json:"table_bytes"`
	BytesPerRun float64 `json:"bytes_per_run"`
	// Lateness is, per sleep task, its WOKEN event time minus its wake
	// time.
	Lateness Percentiles `json:"lateness"`
	// WakeSpread is from the first wake time to the last (how spread the
	// deadlines were); Firing from the first WOKEN event to the last.
	WakeSpread time.Duration `json:"wake_spread_ns"`
	Firing     time.Duration `json:"firing_ns"`
	// Finish is from the last WOKEN event to the last run's completion.
	Finish time.Duration `json:"finish_ns"`
	// AsleepCost is what putting a run to sleep cost the database, per
	// run: from before the first trigger until every run slept (the
	// trigger, the claim of the sleep step, its SLEEPING result and its
	// timer). WakeCost is from then until the last run completed (firing
	// the timer, completing the sleep step, the no-op step).
	AsleepCost Cost `json:"asleep_cost"`
	WakeCost   Cost `json:"wake_cost"`
	// WokenTasksPerSec is the sleepers' two tasks a run (the woken sleep
	// task, completed, then the no-op step) over Firing plus Finish. It
	// is compared with Reference: a burn-down of as many runs of two
	// no-op steps by an engine of the same settings in this process;
	// WokenRatio is the first over the second.
	WokenTasksPerSec float64    `json:"woken_tasks_per_sec"`
	Reference        Throughput `json:"reference"`
	WokenRatio       float64    `json:"woken_ratio"`
	Notes            []string   `json:"notes,omitempty"`
}

// RunSleep runs the sleep scenario.
func RunSleep(ctx context.Context, o Options) (res Sleep, err error) {
	sh := sleepShape(o.Sleep)
	log := o.logger().With("scenario", "sleep", "sleepers", o.Sleepers, "sleep", o.Sleep)
	db, err := openDatabase(ctx, o.DatabaseURL)
	if err != nil {
		return res, err
	}
	defer func() {
		if o.Keep {
			log.Info("keeping schema", "schema", db.schema)
		}
		err = errors.Join(err, db.close(context.WithoutCancel(ctx), o.Keep))
	}()
	res = Sleep{Sleepers: o.Sleepers, Sleep: o.Sleep}
	if err := sleepers(ctx, o, db, sh, &res); err != nil {
		return res, err
	}
	log.Info("burn-down of as many runs of two no-op steps, for reference")
	if res.Reference, err = pairBurnDown(ctx, o, db); err != nil {
		return res, fmt.Errorf("the reference burn-down: %w", err)
	}
	res.WokenTasksPerSec = perSecond(2*o.Sleepers, res.Firing+res.Finish)
	res.WokenRatio = res.WokenTasksPerSec / res.Reference.TasksPerSec
	log.Info("done", "woken tasks/s", int(res.WokenTasksPerSec), "reference tasks/s", int(res.Reference.TasksPerSec))
	return res, nil
}

// sleepEngine starts an engine in this process on db with o's settings
// and shapes registered; stop stops it and adds its log's problems to
// notes.
func sleepEngine(ctx context.Context, o Options, db *database, worker string, shapes ...shape) (
	wfs map[string]*runtime.Workflow, stop func(notes *[]string) error, err error,
) {
	// The engine gets a pool of its own, as a worker process would.
	pool, err := pgstore.Connect(ctx, pgstore.WithSearchPath(db.url, db.schema))
	if err != nil {
		return nil, nil, err
	}
	logs := &logTail{}
	cfg := runtime.Config{Store: pgstore.New(pool), WorkerID: worker, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	o.Engine.apply(&cfg)
	shutdown := o.Engine.withTelemetry(&cfg)
	engine, err := runtime.New(cfg)
	if err == nil {
		wfs, err = register(engine, shapes...)
	}
	if err == nil {
		err = engine.Start(ctx)
	}
	if err != nil {
		_ = shutdown(context.WithoutCancel(ctx))
		pool.Close()
		return nil, nil, fmt.Errorf("starting the engine: %w", err)
	}
	return wfs, func(notes *[]string) error {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := engine.Stop(stop)
		_ = shutdown(stop)
		pool.Close()
		*notes = append(*notes, logs.problems()...)
		return err
	}, nil
}

// pairBurnDown inserts o.Sleepers runs of two no-op steps, then starts
// an engine in this process and measures how fast it works through them.
func pairBurnDown(ctx context.Context, o Options, db *database) (res Throughput, err error) {
	sh := pairShape()
	// An engine that is not started triggers runs only.
	trigger, err := runtime.New(runtime.Config{Store: pgstore.New(db.pool)})
	if err != nil {
		return res, err
	}
	wfs, err := register(trigger, sh)
	if err != nil {
		return res, err
	}
	if err := insertRuns(ctx, wfs[sh.spec.Name], o.Sleepers); err != nil {
		return res, err
	}
	began := time.Now()
	_, stop, err := sleepEngine(ctx, o, db, "bench-pair", sh)
	if err != nil {
		return res, err
	}
	total := 2 * o.Sleepers
	err = waitRunsDone(ctx, db.pool, 50*time.Millisecond, caseTimeout(total), o.Sleep+o.stall())
	err = errors.Join(err, stop(&res.Notes))
	if err != nil {
		return res, err
	}
	w, err := burnWindowSince(ctx, db.pool, began)
	if err != nil {
		return res, err
	}
	if w.completed != total {
		return res, fmt.Errorf("%d COMPLETED events for %d tasks", w.completed, total)
	}
	return Throughput{
		Store: StorePostgres, Workflow: sh.label, Mode: ModeBurnDown, Workers: 1, Runs: o.Sleepers, Tasks: total,
		Elapsed: w.elapsed(), TasksPerSec: perSecond(total, w.elapsed()), RunsPerSec: perSecond(o.Sleepers, w.elapsed()),
		Notes: res.Notes,
	}, nil
}

// sleepers inserts the sleeping runs and measures them (all of Sleep but
// the reference).
func sleepers(ctx context.Context, o Options, db *database, sh shape, res *Sleep) (err error) {
	log := o.logger().With("scenario", "sleep", "sleepers", o.Sleepers, "sleep", o.Sleep)
	wfs, stop, err := sleepEngine(ctx, o, db, "bench-sleeper", sh)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop(&res.Notes)) }()
	// Let the engine settle (leadership, listening) before the baseline.
	if err := sleepCtx(ctx, time.Second); err != nil {
		return err
	}
	res.IdleGoroutines, res.IdleHeap = liveMemory()

	log.Info("inserting sleepers")
	meter, err := startCost(ctx, db.pool)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := insertRuns(ctx, wfs[sh.spec.Name], o.Sleepers); err != nil {
		return err
	}
	res.Insert = time.Since(t0)
	log.Info("waiting until all sleep", "inserted in", res.Insert.Round(time.Millisecond))
	res.MostAsleep, err = waitAsleep(ctx, db.pool, o.Sleepers, o.Sleep+caseTimeout(o.Sleepers))
	if err != nil {
		return err
	}
	res.Asleep = time.Since(t0)
	if res.AsleepCost, meter, err = meter.lap(ctx, o.Sleepers); err != nil {
		return err
	}
	res.AsleepGoroutines, res.AsleepHeap = liveMemory()
	if res.MostAsleep < o.Sleepers {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d of %d runs were asleep at once: the first woke before the last fell asleep; raise -sleep", res.MostAsleep, o.Sleepers))
	}
	if res.TableBytes, err = tableBytes(ctx, db.pool); err != nil {
		return err
	}
	res.BytesPerRun = float64(res.TableBytes) / float64(o.Sleepers)
	log.Info("all asleep; waiting for them to wake and finish", "after", res.Asleep.Round(time.Millisecond))
	if err := waitRunsDone(ctx, db.pool, 250*time.Millisecond, o.Sleep+caseTimeout(2*o.Sleepers), o.Sleep+o.stall()); err != nil {
		return err
	}
	if res.WakeCost, _, err = meter.lap(ctx, o.Sleepers); err != nil {
		return err
	}
	if err := checkAllCompleted(ctx, db.pool); err != nil {
		return err
	}
	if err := lateness(ctx, db.pool, res); err != nil {
		return err
	}
	log.Info("woken", "lateness p50", res.Lateness.P50, "p99", res.Lateness.P99)
	return nil
}

// liveMemory collects garbage and returns the goroutine count and the
// live heap.
func liveMemory() (int, uint64) {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return goruntime.NumGoroutine(), m.HeapAlloc
}

// waitAsleep polls the durable timers until n are set, or until fewer
// are set than were (the first sleepers woke); it returns the most seen.
func waitAsleep(ctx context.Context, pool *pgxpool.Pool, n int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	most := 0
	for {
		var set int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_timers`).Scan(&set); err != nil {
			return most, fmt.Errorf("counting timers: %w", err)
		}
		if set >= n || set < most {
			return max(most, set), nil
		}
		most = set
		if time.Now().After(deadline) {
			return most, fmt.Errorf("only %d of %d runs asleep after %v", set, n, timeout)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return most, err
		}
	}
}

// lateness reads when each sleep task was due and woke.
func lateness(ctx context.Context, pool *pgxpool.Pool, res *Sleep) error {
	rows, err := pool.Query(ctx, `SELECT t.wake_at, e.at FROM trellis_event_log e
		JOIN trellis_tasks t ON t.run_id = e.run_id AND t.step = e.step
		WHERE e.type = 'WOKEN' AND t.kind = 1`)
	if err != nil {
		return fmt.Errorf("reading wake-ups: %w", err)
	}
	defer rows.Close()
	late := make([]time.Duration, 0, res.Sleepers)
	var firstDue, lastDue, firstWoken, lastWoken time.Time
	for rows.Next() {
		var due, woken time.Time
		if err := rows.Scan(&due, &woken); err != nil {
			return fmt.Errorf("reading wake-ups: %w", err)
		}
		late = append(late, woken.Sub(due))
		if firstDue.IsZero() || due.Before(firstDue) {
			firstDue = due
		}
		lastDue = later(lastDue, due)
		if firstWoken.IsZero() || woken.Before(firstWoken) {
			firstWoken = woken
		}
		lastWoken = later(lastWoken, woken)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading wake-ups: %w", err)
	}
	if len(late) != res.Sleepers {
		return fmt.Errorf("%d WOKEN events for %d sleepers", len(late), res.Sleepers)
	}
	res.Lateness = percentiles(late)
	res.WakeSpread = lastDue.Sub(firstDue)
	res.Firing = lastWoken.Sub(firstWoken)
	var finished time.Time
	if err := pool.QueryRow(ctx, `SELECT max(finished_at) FROM trellis_runs`).Scan(&finished); err != nil {
		return fmt.Errorf("reading the last completion: %w", err)
	}
	res.Finish = finished.Sub(lastWoken)
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
