package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	pool, traced := tracedPool(t, "ReadyClaim")
	s := pgstore.New(pool)
	// A burst of new runs of one task, queued, as TriggerMany would
	// create them (faster, in SQL). Never analyzed.
	start := time.Now()
	if _, err := pool.Exec(ctx, fillQueuedRuns, claimPlanRuns, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs created in %v", claimPlanRuns, time.Since(start).Round(time.Millisecond))
	now := time.Now()
	if _, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Workflows: []string{"w"}, Limit: 64, Now: now}); err != nil {
		t.Fatal(err)
	}
	statements := traced.take()
	if len(statements) != 1 {
		t.Fatalf("saw %d claim statements, want 1", len(statements))
	}
	if plan := explainGeneric(t, pool, statements[0]); strings.Contains(plan, "Seq Scan on trellis_tasks") {
		t.Errorf("the claim scans every task:\n%s", plan)
	}
}

var errRollback = errors.New("roll back")

// tracedPool returns a pool on a schema of its own that records the
// statements with the sqlc name given.
func tracedPool(t *testing.T, name string) (*pgxpool.Pool, *listingQueries) {
	t.Helper()
	_, schema := pgtest.PoolWithSchema(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	traced := &listingQueries{name: name}
	cfg.ConnConfig.Tracer = traced
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, traced
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
    INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved, created_at)
    SELECT gen_random_uuid(), 'w', 'w@1', 'tenant-' || (i % 10), 'RUNNING', '{}', 6, now()
    FROM generate_series(1, $1::int) AS i
    RETURNING id, tenant
), tasks AS (
    INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, updated_at)
    SELECT r.id, s, 0, CASE WHEN s = 0 THEN 'QUEUED' ELSE 'PENDING' END,
           CASE WHEN s = 0 THEN '{}'::smallint[] ELSE ARRAY[s - 1]::smallint[] END,
           CASE WHEN s = 0 THEN 0 ELSE 1 END, true, 1, now()
    FROM runs r CROSS JOIN generate_series(0, $2::int - 1) AS s
)
-- Each tenant's runs one block apart, as trellis_enqueue queues them.
INSERT INTO trellis_ready (run_id, step, qid, tenant, workflow)
SELECT r.id, 0, (row_number() OVER (PARTITION BY r.tenant)) * 1048576 + t.grp, r.tenant, 'w'
FROM runs r JOIN tenants t ON t.tenant = r.tenant`

// completePlanHistory and completePlanRunning are the finished and running
// runs TestCompleteReadsRunsByKey creates.
const (
	completePlanHistory = 300_000
	completePlanRunning = 20_000
)

// TestCompleteReadsRunsByKey checks that recording results reads the
// runs they belong to by key whatever the planner believes of the runs
// table. With a large finished history analyzed, status = 'RUNNING' looks
// rare, and the update of the runs was planned as a read of every running
// run through the status index: with a million finished runs, burn-down
// fell to 635 tasks/s.
func TestCompleteReadsRunsByKey(t *testing.T) {
	ctx := context.Background()
	pool, traced := tracedPool(t, "TasksComplete")
	s := pgstore.New(pool)
	start := time.Now()
	if _, err := pool.Exec(ctx, fillFinishedRuns, completePlanHistory); err != nil {
		t.Fatal(err)
	}
	// Analyzed when nothing ran, as after the last burst was done.
	if _, err := pool.Exec(ctx, `ANALYZE trellis_runs, trellis_tasks`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fillQueuedRuns, completePlanRunning, 6); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d finished runs created and analyzed, then %d running, in %v", completePlanHistory, completePlanRunning, time.Since(start).Round(time.Millisecond))
	now := time.Now()
	claimed, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Workflows: []string{"w"}, Limit: 64, Now: now})
	if err != nil || len(claimed) != 64 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	res := store.Results{Now: now}
	for _, c := range claimed {
		res.Completions = append(res.Completions, store.Completion{Attempt: store.Attempt{Key: c.Key, Attempt: c.Attempt}, Output: []byte(`{}`), Children: []int{c.Key.Step + 1}})
	}
	if _, err := s.Finish(ctx, res); err != nil {
		t.Fatal(err)
	}
	statements := traced.take()
	if len(statements) != 1 {
		t.Fatalf("saw %d completion statements, want 1", len(statements))
	}
	plan := explainGeneric(t, pool, statements[0])
	for _, bad := range []string{"Seq Scan on trellis_runs", "trellis_runs_status_created", "trellis_runs_finished"} {
		if strings.Contains(plan, bad) {
			t.Errorf("recording results reads runs other than theirs (%s):\n%s", bad, plan)
		}
	}
}

// explainGeneric runs a recorded statement again under EXPLAIN ANALYZE on
// its generic plan (a pooled connection runs statements prepared, and
// after five executions on their generic plan), rolled back, and returns
// the plan.
func explainGeneric(t *testing.T, pool *pgxpool.Pool, q tracedQuery) string {
	t.Helper()
	var plan []string
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
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
    INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved, created_at, finished_at)
    SELECT gen_random_uuid(), 'w', 'w@1', 'tenant-' || (i % 10), 'COMPLETED', '{}', 0,
           now() - interval '1 day', now() - interval '1 day'
    FROM generate_series(1, $1::int) AS i
    RETURNING id
)
INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, updated_at, finished_at)
SELECT id, 0, 0, 'COMPLETED', '{}'::smallint[], 0, true, 1, now() - interval '1 day', now() - interval '1 day'
FROM runs`
