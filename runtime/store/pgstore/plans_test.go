package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// TestClaimReadsTasksByKey checks that a claim reads the tasks it takes
// by their key whatever the planner believes of the tasks table. After a
// burst of new runs that was never analyzed (autovacuum may be off, or
// behind), the claim's update of the tasks it took was planned as a hash
// join over a scan of every task: 774 ms a claim with 1.5 million tasks,
// against 26 ms by key.
func TestClaimReadsTasksByKey(t *testing.T) {
	ctx := context.Background()
	traced := &listingQueries{name: "ReadyClaim"}
	pool := tracedPool(t, traced)
	s := pgstore.New(pool)
	// A burst of new runs of one task, queued, as TriggerMany would
	// create them (faster, in SQL). Never analyzed.
	start := time.Now()
	if _, err := pool.Exec(ctx, fillQueuedRuns, claimPlanRuns, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs created in %v", claimPlanRuns, time.Since(start).Round(time.Millisecond))
	now := time.Now()
	if _, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Versions: []string{"w@1"}, Limit: 64, Now: now}); err != nil {
		t.Fatal(err)
	}
	statements := traced.take()
	if len(statements) != 1 {
		t.Fatalf("saw %d claim statements, want 1", len(statements))
	}
	if plan := explainIn(t, pool, statements[0], "force_generic_plan"); strings.Contains(plan, "Seq Scan on trellis_tasks") {
		t.Errorf("the claim scans every task:\n%s", plan)
	}
}

var errRollback = errors.New("roll back")

// tracedPool returns a pool on a schema of its own whose statements go
// through tracer.
func tracedPool(tb testing.TB, tracer pgx.QueryTracer) *pgxpool.Pool {
	tb.Helper()
	_, schema := pgtest.PoolWithSchema(tb)
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// claimPlanRuns is how many runs TestClaimReadsTasksByKey creates: with
// the claim as it was, 120,000 queued tasks got the scan (80,000 runs of
// six tasks did not).
const claimPlanRuns = 120_000

// fillQueuedRuns creates $1 runs of $2 tasks in a chain, ten tenants'
// worth, with the first task of each queued.
const fillQueuedRuns = `
WITH tenants AS (
    INSERT INTO trellis_tenants (tenant, grp)
    SELECT 'tenant-' || g, nextval('trellis_tenant_group') FROM generate_series(0, 9) AS g
    RETURNING tenant, grp
), runs AS (
    INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, created_at)
    SELECT gen_random_uuid(), 'w', 'w@1', 'tenant-' || (i % 10), 'RUNNING', '{}', 1, now()
    FROM generate_series(1, $1::int) AS i
    RETURNING id, tenant
), tasks AS (
    INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, sink, updated_at)
    SELECT r.id, s, 0, CASE WHEN s = 0 THEN 'QUEUED' ELSE 'PENDING' END,
           CASE WHEN s = 0 THEN '{}'::smallint[] ELSE ARRAY[s - 1]::smallint[] END,
           CASE WHEN s = 0 THEN 0 ELSE 1 END, true, 1, s = $2::int - 1, now()
    FROM runs r CROSS JOIN generate_series(0, $2::int - 1) AS s
)
-- Each tenant's runs one block apart, as trellis_enqueue queues new runs
-- of normal priority.
INSERT INTO trellis_ready (run_id, step, qid, tenant, workflow, version, lane)
SELECT r.id, 0, (row_number() OVER (PARTITION BY r.tenant)) * 1048576 + t.grp, r.tenant, 'w', 'w@1', trellis_lane(2::smallint, false)
FROM runs r JOIN tenants t ON t.tenant = r.tenant`

// historyRuns and burstRuns are the finished and running runs
// TestWorkReadsByKeyWithHistory creates.
const (
	historyRuns = 300_000
	burstRuns   = 20_000
)

// explainIn runs a recorded statement again under EXPLAIN ANALYZE with
// plan_cache_mode set to mode, rolled back, and returns the plan. A
// pooled connection runs statements prepared: planned for their values
// the first five times, then generic if that looks no dearer.
func explainIn(t *testing.T, pool *pgxpool.Pool, q tracedQuery, mode string) string {
	t.Helper()
	var plan []string
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `SELECT set_config('plan_cache_mode', $1, true)`, mode); err != nil {
			return err
		}
		rows, err := tx.Query(context.Background(), "EXPLAIN (ANALYZE, COSTS OFF) "+q.sql, q.args...)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// fillFinishedRuns creates $1 completed runs of one completed task each:
// a history.
const fillFinishedRuns = `
WITH runs AS (
    INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, created_at, finished_at)
    SELECT gen_random_uuid(), 'w', 'w@1', 'tenant-' || (i % 10), 'COMPLETED', '{}', 0,
           now() - interval '1 day', now() - interval '1 day'
    FROM generate_series(1, $1::int) AS i
    RETURNING id
)
INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, updated_at, finished_at)
SELECT id, 0, 0, 'COMPLETED', '{}'::smallint[], 0, true, 1, now() - interval '1 day', now() - interval '1 day'
FROM runs`

// statementLog records every sqlc statement a pool runs, with its
// arguments.
type statementLog struct {
	mu  sync.Mutex
	got map[string][]tracedQuery
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	_, rest, ok := strings.Cut(d.SQL, "-- name: ")
	if !ok {
		return ctx
	}
	name, _, _ := strings.Cut(rest, " ")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string][]tracedQuery{}
	}
	l.got[name] = append(l.got[name], tracedQuery{d.SQL, d.Args})
	return ctx
}

func (*statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestWorkReadsByKeyWithHistory runs the statements of a worker's life
// (claim, start, complete, retry, sleep, fail, fire timers, release,
// recover, cancel) on a large history analyzed while nothing ran, with a
// burst of runs the statistics do not know, and checks that none reads the
// runs, tasks or events tables whole, or runs through an index of
// finished or listed runs: planned generic (as a pooled connection runs
// them after five executions) and for their values. With the statistics
// saying no run is running, r.status = 'RUNNING' in the statement that
// records results was planned as a read of every running run through the
// status index: with a million finished runs, burn-down fell to 635
// tasks/s.
func TestWorkReadsByKeyWithHistory(t *testing.T) {
	ctx := context.Background()
	log := &statementLog{}
	pool := tracedPool(t, log)
	s := pgstore.New(pool)
	if _, err := pool.Exec(ctx, fillFinishedRuns, historyRuns); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE trellis_runs, trellis_tasks, trellis_events`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fillQueuedRuns, burstRuns, 6); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claimed, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Versions: []string{"w@1"}, Limit: 80, Now: now})
	if err != nil || len(claimed) != 80 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	at := func(i int) store.Attempt { return store.Attempt{Key: claimed[i].Key, Attempt: claimed[i].Attempt} }
	if err := s.StartTasks(ctx, []store.Attempt{at(0), at(1)}, now); err != nil {
		t.Fatal(err)
	}
	res := store.Results{Now: now}
	for i := range 16 {
		res.Completions = append(res.Completions, store.Completion{Attempt: at(i), Output: []byte(`{}`), Children: []int{1}})
		res.Retries = append(res.Retries, store.Retry{Attempt: at(16 + i), Error: "again", At: now.Add(-time.Second)})
		res.Sleeps = append(res.Sleeps, store.Sleep{Attempt: at(32 + i), For: time.Millisecond})
		res.Failures = append(res.Failures, store.Failure{Attempt: at(48 + i), Error: "boom"})
	}
	if _, err := s.Finish(ctx, res); err != nil {
		t.Fatal(err)
	}
	// Completions alone take the one-statement path.
	only := store.Results{Now: now}
	for i := 64; i < 72; i++ {
		only.Completions = append(only.Completions, store.Completion{Attempt: at(i), Output: []byte(`{}`), Children: []int{1}})
	}
	if _, err := s.Finish(ctx, only); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FireTimers(ctx, now.Add(time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseTasks(ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{at(72), at(73)}, Reason: "shutting down", Now: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecoverTasks(ctx, store.Recover{StaleBefore: now.Add(time.Hour), Limit: 100, Now: now}); err != nil {
		t.Fatal(err)
	}
	var cancel []uuid.UUID
	for i := 74; i < 80; i++ {
		cancel = append(cancel, claimed[i].Key.Run)
	}
	if _, err := s.CancelRuns(ctx, cancel, now); err != nil {
		t.Fatal(err)
	}

	log.mu.Lock()
	got := log.got
	log.mu.Unlock()
	for _, name := range []string{"ReadyClaim", "TasksStart", "TasksComplete", "TasksRetry", "TasksSleep", "TasksFail", "RunsFail", "TimersFire", "RunsCancel", "TasksCancelUnfinished", "TasksUnqueueUnfinished"} {
		if len(got[name]) == 0 {
			t.Errorf("%s did not run", name)
		}
	}
	bad := []string{"Seq Scan on trellis_runs", "Seq Scan on trellis_tasks", "Seq Scan on trellis_events",
		"trellis_runs_status_created", "trellis_runs_finished", "trellis_runs_created", "trellis_runs_workflow_created", "trellis_runs_tenant_created"}
	for name, qs := range got {
		if strings.HasPrefix(name, "Migrat") || strings.HasPrefix(name, "Ops") {
			continue
		}
		for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
			plan := explainIn(t, pool, qs[len(qs)-1], mode)
			for _, b := range bad {
				if strings.Contains(plan, b) {
					t.Errorf("%s (%s) reads %s:\n%s", name, mode, b, plan)
				}
			}
		}
	}
}
