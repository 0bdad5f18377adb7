package pgstore_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// fillHistory inserts the runs $1 to $2 of a history of $3 finished runs
// as an engine would have left them, in one statement: each with six
// tasks and eighteen events (QUEUED, STARTED and a last one per task: the
// first two and a COMPLETED in the task's slots, schema/0026, a FAILED
// or CANCELLED a row), 96% COMPLETED, 2% FAILED (the first task failed,
// the others cancelled), 2% CANCELLED, finished evenly over the 60 days
// before $4, each two seconds after it was created, across 20 workflows
// and 1,000 tenants.
const fillHistory = `
WITH runs AS (
    INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, failed_step, error,
                              created_at, finished_at)
    SELECT gen_random_uuid(), 'workflow-' || (i % 20), 'v1', 'tenant-' || ((i * 7919) % 1000), s.status, '{}',
           CASE WHEN s.status = 'COMPLETED' THEN 0 ELSE 6 END,
           CASE WHEN s.status = 'FAILED' THEN 0 ELSE -1 END,
           CASE WHEN s.status = 'FAILED' THEN 'boom' END,
           f.at - interval '2 seconds', f.at
    FROM generate_series($1::bigint, $2::bigint) AS i
    CROSS JOIN LATERAL (SELECT $4::timestamptz - (($3::bigint - i) * (interval '60 days' / $3::bigint)) AS at) f
    CROSS JOIN LATERAL (SELECT CASE WHEN i % 50 = 0 THEN 'FAILED' WHEN i % 50 = 1 THEN 'CANCELLED'
                                    ELSE 'COMPLETED' END AS status) s
    RETURNING id, status, created_at, finished_at
), tasks AS (
    INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, attempt,
                               updated_at, finished_at, log_queued, log_queued_at, log_queued_attempt,
                               log_started, log_started_at, log_started_attempt,
                               log_completed, log_completed_at, log_completed_attempt)
    SELECT r.id, k.step, 0, k.status, '{}', 0, true, 1, 1, r.finished_at, r.finished_at,
           nextval('trellis_events_id_seq'), k.at, 1, nextval('trellis_events_id_seq'), k.at, 1,
           CASE WHEN k.status = 'COMPLETED' THEN nextval('trellis_events_id_seq') END,
           CASE WHEN k.status = 'COMPLETED' THEN k.at END, CASE WHEN k.status = 'COMPLETED' THEN 1 END
    FROM runs r
    CROSS JOIN LATERAL (
        SELECT g.step, r.created_at + g.step * interval '100 milliseconds' AS at,
               CASE WHEN r.status = 'COMPLETED' THEN 'COMPLETED'
                    WHEN r.status = 'FAILED' AND g.step = 0 THEN 'FAILED'
                    ELSE 'CANCELLED' END AS status
        FROM generate_series(0, 5) AS g (step)
    ) AS k
    RETURNING run_id, step, status, updated_at
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at)
    SELECT run_id, step, status, 1, updated_at FROM tasks WHERE status <> 'COMPLETED'
)
SELECT count(*) FROM runs`

// purgeStatements records the purge statements a pool runs, with their
// arguments, so that they can be EXPLAINed as PurgeRuns sent them.
type purgeStatements struct {
	mu  sync.Mutex
	got []tracedQuery
}

func (p *purgeStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "-- name: RunsPurge ") {
		p.mu.Lock()
		p.got = append(p.got, tracedQuery{d.SQL, d.Args})
		p.mu.Unlock()
	}
	return ctx
}

func (*purgeStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (p *purgeStatements) last(tb testing.TB) tracedQuery {
	tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.got) == 0 {
		tb.Fatal("no purge statement seen")
	}
	return p.got[len(p.got)-1]
}

// historyFixture is a schema holding a history of n finished runs, and a
// store whose purge statements are recorded.
type historyFixture struct {
	store  *pgstore.Store
	pool   *pgxpool.Pool
	traced *purgeStatements
	now    time.Time
}

func newHistoryFixture(tb testing.TB, n int) *historyFixture {
	tb.Helper()
	ctx := context.Background()
	traced := &purgeStatements{}
	pool := tracedPool(tb, traced)
	now := time.Now().UTC().Truncate(time.Second)
	start := time.Now()
	const chunk = 50_000
	for from := 1; from <= n; from += chunk {
		if _, err := pool.Exec(ctx, fillHistory, from, min(from+chunk-1, n), n, now); err != nil {
			tb.Fatalf("filling: %v", err)
		}
	}
	filled := time.Since(start)
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs, trellis_tasks, trellis_events`); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("%d runs (%d tasks, %d events) inserted in %v; vacuumed and analyzed in %v",
		n, 6*n, 18*n, filled.Round(time.Millisecond), (time.Since(start) - filled).Round(time.Millisecond))
	return &historyFixture{store: pgstore.New(pool), pool: pool, traced: traced, now: now}
}

// explain runs q under EXPLAIN (ANALYZE, BUFFERS), planned as PurgeRuns
// plans it, in a transaction it rolls back: nothing is deleted.
func (f *historyFixture) explain(tb testing.TB, q tracedQuery) string {
	tb.Helper()
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`); err != nil {
		tb.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q.sql, q.args...)
	if err != nil {
		tb.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// logPlan logs the scans of the last purge statement's plan, run again,
// and the plan itself with TRELLIS_BENCH_EXPLAIN=1.
func (f *historyFixture) logPlan(b *testing.B, name string) {
	b.Helper()
	plan := f.explain(b, f.traced.last(b))
	scans, seq, _, pages := summary(plan)
	b.Logf("%s: scans %v, seq scan %v, %d pages", name, scans, seq, pages)
	if os.Getenv("TRELLIS_BENCH_EXPLAIN") == "1" {
		b.Log("\n" + plan)
	}
}

// purgeCases are the purges the leader and trellis runs purge make: a
// batch of a status with runs to delete, one of a status with few, one
// filtered by workflow, and a check that finds nothing old enough.
func purgeCases(now time.Time) map[string]store.Purge {
	limit := 1000
	return map[string]store.Purge{
		"completed":       {Status: store.RunCompleted, FinishedBefore: now.Add(-7 * 24 * time.Hour), Limit: limit},
		"failed":          {Status: store.RunFailed, FinishedBefore: now.Add(-30 * 24 * time.Hour), Limit: limit},
		"workflow":        {Status: store.RunCompleted, FinishedBefore: now.Add(-7 * 24 * time.Hour), Workflow: "workflow-3", Limit: limit},
		"nothing-to-do":   {Status: store.RunCompleted, FinishedBefore: now.Add(-90 * 24 * time.Hour), Limit: limit},
		"cancelled-older": {Status: store.RunCancelled, FinishedBefore: now.Add(-59 * 24 * time.Hour), Limit: limit},
	}
}

// TestPurgeRunsUsesIndexes checks the plans of purge batches: the runs
// are read from trellis_runs_finished (schema/0007), each run's tasks
// checked and deleted and its events deleted through their primary
// keys, no table is scanned whole, and a purge that finds nothing old
// enough reads a page or two.
func TestPurgeRunsUsesIndexes(t *testing.T) {
	f := newHistoryFixture(t, 20_000)
	for name, p := range purgeCases(f.now) {
		if _, err := f.store.PurgeRuns(context.Background(), p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan := f.explain(t, f.traced.last(t))
		scans, seq, _, pages := summary(plan)
		slices.Sort(scans)
		scans = slices.Compact(scans)
		want := []string{"trellis_event_waits_pkey", "trellis_events_pkey", "trellis_runs_finished", "trellis_runs_pkey",
			"trellis_sent_events_run", "trellis_tasks_pkey"}
		if name == "workflow" {
			// Either index finds a workflow's old runs; the planner may
			// AND them.
			scans = slices.DeleteFunc(scans, func(s string) bool { return s == "trellis_runs_workflow_created" })
		}
		if !slices.Equal(scans, want) || seq {
			t.Errorf("%s: read %v (seq scan %v), want %v; the plan:\n%s", name, scans, seq, want, plan)
		}
		if name == "nothing-to-do" && pages > 10 {
			t.Errorf("a purge that finds nothing read %d pages; the plan:\n%s", pages, plan)
		}
	}
}

// BenchmarkPurgeRuns purges, a batch of 1,000 at a time as the leader
// does (without its pauses), every completed run more than 7 days old of
// a history of TRELLIS_BENCH_RUNS finished runs (default 100,000; each
// with 6 tasks and 18 events), and reports runs purged per second and the
// batches' latencies. Each case's plan is logged (-v), and printed with
// TRELLIS_BENCH_EXPLAIN=1.
//
//	TRELLIS_BENCH_RUNS=1000000 go test -run '^$' -bench PurgeRuns -benchtime 1x -v ./runtime/store/pgstore/
func BenchmarkPurgeRuns(b *testing.B) {
	n := 100_000
	if v := os.Getenv("TRELLIS_BENCH_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("TRELLIS_BENCH_RUNS=%q: want a positive number", v)
		}
	}
	for range b.N {
		f := newHistoryFixture(b, n)
		ctx := context.Background()
		for name, p := range purgeCases(f.now) {
			if name == "completed" {
				continue // measured below
			}
			if _, err := f.store.PurgeRuns(ctx, p); err != nil {
				b.Fatal(err)
			}
			f.logPlan(b, name)
		}
		p := purgeCases(f.now)["completed"]
		var took []time.Duration
		purged := 0
		start := time.Now()
		for {
			t0 := time.Now()
			res, err := f.store.PurgeRuns(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(t0))
			purged += res.Runs
			if len(took) == 1 {
				f.logPlan(b, "completed, first batch")
			}
			if res.Runs < p.Limit {
				break
			}
		}
		elapsed := time.Since(start)
		slices.Sort(took)
		pct := func(q float64) time.Duration { return took[min(len(took)-1, int(q*float64(len(took))))] }
		b.Logf("purged %d completed runs in %d batches in %v: %.0f runs/s; batch p50 %v, p99 %v, max %v",
			purged, len(took), elapsed.Round(time.Millisecond), float64(purged)/elapsed.Seconds(),
			pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
		b.ReportMetric(float64(purged)/elapsed.Seconds(), "runs/s")
		b.ReportMetric(float64(pct(0.5).Microseconds())/1000, "p50-ms/batch")
		b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms/batch")
	}
}
