package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Purge is what deleting old runs costs the workers: o.PurgeRuns finished
// runs aged past their retention are inserted with SQL, then a diamond-6
// burn-down of o.Runs runs is worked by one worker process twice, first
// while nothing is purged, then while a leader (an engine in the harness
// process, with the default retention) deletes the old runs.
type Purge struct {
	// HistoryRuns finished runs, each with 6 tasks and 18 events, were
	// inserted in HistoryInsert (then vacuumed and analyzed).
	HistoryRuns   int           `json:"history_runs"`
	HistoryInsert time.Duration `json:"history_insert_ns"`
	// Baseline is the burn-down with no purge, WithPurge the one while
	// the leader purged; Ratio is WithPurge's tasks/s over Baseline's.
	Baseline  Throughput `json:"baseline"`
	WithPurge Throughput `json:"with_purge"`
	Ratio     float64    `json:"ratio"`
	// Purged runs were deleted in Elapsed, from the start of the first
	// batch to the end of the last (pauses included: the leader waits
	// after each batch as long as it took); PurgedPerSec divides them.
	Purged       int           `json:"purged"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	PurgedPerSec float64       `json:"purged_per_sec"`
	// Batches are the batches' latencies (one statement each);
	// DuringBurnDown of them ended within the WithPurge burn-down's
	// window, and Overlap is the share of that window the purge ran in.
	Batches        Percentiles `json:"batches"`
	DuringBurnDown int         `json:"during_burn_down"`
	Overlap        float64     `json:"overlap"`
	Notes          []string    `json:"notes,omitempty"`
}

// historyTenant is the tenant of the inserted history, so that the
// burn-downs' runs are told apart from it.
const historyTenant = "history"

// fillHistory inserts the runs $1 to $2 of a history of $3 runs of
// workflow $4, version $5, as an engine leaves diamond-6 runs (a, four
// b's, c): six tasks with their parents, each with its three ordinary
// events (QUEUED, STARTED, COMPLETED) in its slots (schema/0026), as the
// engine writes them. 96% COMPLETED, 2% FAILED (a failed, the rest
// cancelled), 2% CANCELLED; they finished evenly over the 30 days that
// ended 31 days before $6, past every default retention.
const fillHistory = `
WITH runs AS (
    INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, failed_step, error,
                              created_at, finished_at)
    SELECT gen_random_uuid(), $4, $5, '` + historyTenant + `', s.status, '{}',
           CASE WHEN s.status = 'COMPLETED' THEN 0 ELSE 6 END,
           CASE WHEN s.status = 'FAILED' THEN 0 ELSE -1 END,
           CASE WHEN s.status = 'FAILED' THEN 'boom' END,
           f.at - interval '40 milliseconds', f.at
    FROM generate_series($1::bigint, $2::bigint) AS i
    CROSS JOIN LATERAL (SELECT $6::timestamptz - interval '31 days'
                               - (($3::bigint - i) * (interval '30 days' / $3::bigint)) AS at) f
    CROSS JOIN LATERAL (SELECT CASE WHEN i % 50 = 0 THEN 'FAILED' WHEN i % 50 = 1 THEN 'CANCELLED'
                                    ELSE 'COMPLETED' END AS status) s
    RETURNING id, status, created_at, finished_at
), tasks AS (
    INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, attempt,
                               updated_at, finished_at,
                               log_queued, log_queued_at, log_queued_attempt, log_started, log_started_at, log_started_attempt,
                               log_completed, log_completed_at, log_completed_attempt)
    SELECT r.id, k.step, 0,
           CASE WHEN r.status = 'COMPLETED' THEN 'COMPLETED'
                WHEN r.status = 'FAILED' AND k.step = 0 THEN 'FAILED'
                ELSE 'CANCELLED' END,
           CASE WHEN k.step = 0 THEN '{}'::smallint[] WHEN k.step < 5 THEN '{0}' ELSE '{1,2,3,4}' END,
           0, true, 4, 1, r.finished_at, r.finished_at,
           nextval('trellis_events_id_seq'), r.created_at + k.step * interval '5 milliseconds', 0,
           nextval('trellis_events_id_seq'), r.created_at + k.step * interval '5 milliseconds', 1,
           nextval('trellis_events_id_seq'), r.created_at + k.step * interval '5 milliseconds', 1
    FROM runs r CROSS JOIN generate_series(0, 5) AS k (step)
)
SELECT count(*) FROM runs`

// historyChunk is how many runs one fillHistory statement inserts.
const historyChunk = 50_000

// RunPurge runs the purge scenario.
func RunPurge(ctx context.Context, o Options) (res Purge, err error) {
	sh := diamondShape()
	log := o.logger().With("scenario", "purge", "history", o.PurgeRuns, "runs", o.Runs)
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	res.HistoryRuns = o.PurgeRuns
	log.Info("inserting the history")
	t0 := time.Now()
	if err := insertHistory(ctx, c.db.pool, c.workflow(sh), o.PurgeRuns); err != nil {
		return res, err
	}
	res.HistoryInsert = time.Since(t0)

	log.Info("burn-down without a purge", "history inserted in", res.HistoryInsert.Round(time.Millisecond))
	res.Baseline, err = purgeBurnDown(ctx, c, sh, nil)
	if err != nil {
		return res, fmt.Errorf("burn-down without a purge: %w", err)
	}
	log.Info("burn-down while the leader purges", "tasks/s without", int(res.Baseline.TasksPerSec))
	var batches purgeLog
	res.WithPurge, err = purgeBurnDown(ctx, c, sh, &batches)
	if err != nil {
		return res, fmt.Errorf("burn-down while purging: %w", err)
	}
	res.Ratio = res.WithPurge.TasksPerSec / res.Baseline.TasksPerSec
	res.Notes = append(res.Notes, batches.problems.problems()...)
	if err := batches.summarise(&res); err != nil {
		return res, err
	}
	if err := checkPurged(ctx, c.db.pool, 2*o.Runs); err != nil {
		return res, err
	}
	if res.Overlap < 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("the purge ran during %.0f%% of the burn-down only: raise -purge-runs", 100*res.Overlap))
	}
	log.Info("done", "ratio", fmt.Sprintf("%.2f", res.Ratio), "purged/s", int(res.PurgedPerSec))
	return res, nil
}

// insertHistory inserts n finished runs of wf (see fillHistory), then
// vacuums and analyzes the tables, as a long-lived installation's are.
func insertHistory(ctx context.Context, pool *pgxpool.Pool, wf *runtime.Workflow, n int) error {
	now := time.Now()
	for from := 1; from <= n; from += historyChunk {
		to := min(from+historyChunk-1, n)
		if _, err := pool.Exec(ctx, fillHistory, from, to, n, wf.Name(), wf.Definition().Version(), now); err != nil {
			return fmt.Errorf("inserting the history: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs, trellis_tasks, trellis_events`); err != nil {
		return fmt.Errorf("vacuuming the history: %w", err)
	}
	return nil
}

// purgeBurnDown inserts o.Runs runs of sh and measures how fast one
// worker process works through them, while an engine in this process
// leads: with batches nil it keeps every run (KeepForever), otherwise it
// purges with the default retention from before the worker starts,
// recording its batches in batches. The worker never leads, so never
// purges.
func purgeBurnDown(ctx context.Context, c *pgCase, sh shape, batches *purgeLog) (res Throughput, err error) {
	if err := insertRuns(ctx, c.workflow(sh), c.o.Runs); err != nil {
		return res, err
	}
	pool, err := pgstore.Connect(ctx, pgstore.WithSearchPath(c.db.url, c.db.schema))
	if err != nil {
		return res, err
	}
	defer pool.Close()
	cfg := runtime.Config{Store: pgstore.New(pool), WorkerID: "bench-leader"}
	logs := &logTail{}
	if batches == nil {
		keep := runtime.KeepForever
		cfg.Retention = runtime.Retention{Completed: keep, Failed: keep, Cancelled: keep}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	} else {
		batches.started = make(chan struct{})
		batches.done = make(chan struct{})
		cfg.Retention.Interval = 100 * time.Millisecond
		cfg.Logger = slog.New(batches)
	}
	leader, err := runtime.New(cfg)
	if err != nil {
		return res, fmt.Errorf("creating the leader: %w", err)
	}
	if err := leader.Start(ctx); err != nil {
		return res, fmt.Errorf("starting the leader: %w", err)
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, leader.Stop(stop))
		for _, p := range logs.problems() {
			res.Notes = append(res.Notes, "leader: "+p)
		}
	}()
	for !leader.IsLeader() {
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return res, err
		}
	}
	if batches != nil {
		select {
		case <-batches.started:
		case <-time.After(time.Minute):
			return res, errors.New("the leader deleted no batch within a minute")
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	began := time.Now()
	meter, err := startCost(ctx, c.db.pool)
	if err != nil {
		return res, err
	}
	if err := c.startWorkers(ctx, 1); err != nil {
		return res, err
	}
	total := c.o.Runs * sh.tasks()
	if err := c.waitRunsDone(ctx, total); err != nil {
		return res, err
	}
	cost, _, err := meter.lap(ctx, total)
	if err != nil {
		return res, err
	}
	if err := c.stopWorkers(); err != nil {
		return res, err
	}
	w, err := burnWindowSince(ctx, c.db.pool, began)
	if err != nil {
		return res, err
	}
	if w.completed != total {
		return res, fmt.Errorf("%d COMPLETED events for %d tasks", w.completed, total)
	}
	if batches != nil {
		batches.window = w
		select {
		case <-batches.done:
		case <-time.After(caseTimeout(c.o.PurgeRuns)):
			return res, fmt.Errorf("the purge did not end within %v", caseTimeout(c.o.PurgeRuns))
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	res = Throughput{
		Store: StorePostgres, Workflow: sh.label, Mode: ModeBurnDown, Workers: 1,
		Runs: c.o.Runs, Tasks: total, Elapsed: w.elapsed(),
		TasksPerSec: perSecond(total, w.elapsed()), RunsPerSec: perSecond(c.o.Runs, w.elapsed()), DBCPUPerTask: cost.DBCPU,
		Notes: c.notes,
	}
	c.notes = nil
	return res, nil
}

// burnWindowSince reads the window of a burn-down that began at since
// from the events written since then.
func burnWindowSince(ctx context.Context, pool *pgxpool.Pool, since time.Time) (window, error) {
	var w window
	var first, last *time.Time
	err := pool.QueryRow(ctx, `SELECT min(at) FILTER (WHERE type = 'STARTED'), max(at) FILTER (WHERE type = 'COMPLETED'),
		count(*) FILTER (WHERE type = 'COMPLETED') FROM trellis_event_log WHERE at >= $1`, since).Scan(&first, &last, &w.completed)
	if err != nil {
		return w, fmt.Errorf("reading the burn-down window: %w", err)
	}
	if first == nil || last == nil {
		return w, errors.New("the event log holds no STARTED or no COMPLETED event since the burn-down began")
	}
	w.first, w.last = *first, *last
	return w, nil
}

// checkPurged checks that the history is gone and that the burn-downs'
// runs, all completed, are not.
func checkPurged(ctx context.Context, pool *pgxpool.Pool, runs int) error {
	var history, completed, other int
	err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tenant = $1),
		count(*) FILTER (WHERE tenant <> $1 AND status = 'COMPLETED'), count(*) FILTER (WHERE tenant <> $1 AND status <> 'COMPLETED')
		FROM trellis_runs`, historyTenant).Scan(&history, &completed, &other)
	if err != nil {
		return fmt.Errorf("counting runs: %w", err)
	}
	var orphans int
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM trellis_tasks t WHERE NOT EXISTS (SELECT 1 FROM trellis_runs r WHERE r.id = t.run_id))
		+ (SELECT count(*) FROM trellis_events e WHERE NOT EXISTS (SELECT 1 FROM trellis_runs r WHERE r.id = e.run_id))`).Scan(&orphans)
	if err != nil {
		return fmt.Errorf("counting orphans: %w", err)
	}
	if history != 0 || completed != runs || other != 0 || orphans != 0 {
		return fmt.Errorf("after the purge: %d history runs left (want 0), %d burn-down runs completed (want %d), %d not, %d tasks and events without their run",
			history, completed, runs, other, orphans)
	}
	return nil
}

// purgeLog is the purging leader's log handler: it records each batch
// the engine logs (at Debug), signals the first batch and the end of the
// pass (the summary at Info), and keeps WARN and ERROR lines as notes.
type purgeLog struct {
	mu       sync.Mutex
	batches  []purgeBatch
	started  chan struct{}
	done     chan struct{}
	once     [2]sync.Once
	window   window // the burn-down's, set once it is over
	problems logTail
}

type purgeBatch struct {
	end  time.Time
	took time.Duration
	runs int
}

func (l *purgeLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *purgeLog) Handle(_ context.Context, r slog.Record) error {
	switch {
	case r.Message == "purged a batch of runs":
		b := purgeBatch{end: r.Time}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "took":
				b.took = a.Value.Duration()
			case "runs":
				b.runs = int(a.Value.Int64())
			}
			return true
		})
		l.mu.Lock()
		l.batches = append(l.batches, b)
		l.mu.Unlock()
		l.once[0].Do(func() { close(l.started) })
	case r.Message == "purged finished runs past their retention":
		l.once[1].Do(func() { close(l.done) })
	case r.Level >= slog.LevelWarn:
		_, _ = fmt.Fprintf(&l.problems, "level=%s msg=%q\n", r.Level, r.Message)
	}
	return nil
}

func (l *purgeLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *purgeLog) WithGroup(string) slog.Handler      { return l }

// summarise fills in the purge's figures from its batches.
func (l *purgeLog) summarise(res *Purge) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.batches) == 0 {
		return errors.New("the leader logged no purge batch")
	}
	begin := l.batches[0].end.Add(-l.batches[0].took)
	end := l.batches[len(l.batches)-1].end
	took := make([]time.Duration, len(l.batches))
	for i, b := range l.batches {
		took[i] = b.took
		res.Purged += b.runs
		if !b.end.Before(l.window.first) && !b.end.After(l.window.last) {
			res.DuringBurnDown++
		}
	}
	res.Elapsed = end.Sub(begin)
	res.PurgedPerSec = perSecond(res.Purged, res.Elapsed)
	res.Batches = percentiles(took)
	if w := l.window.elapsed(); w > 0 {
		from, to := later(begin, l.window.first), earlier(end, l.window.last)
		res.Overlap = max(to.Sub(from), 0).Seconds() / w.Seconds()
	}
	if res.Purged != res.HistoryRuns {
		return fmt.Errorf("the leader purged %d runs of the %d inserted", res.Purged, res.HistoryRuns)
	}
	return nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
