package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/schema"
)

// A database at version 1 holding tasks of every kind upgrades in place:
// its rows keep their kinds, pass the new check, and the store reads them.
func TestMigrateUpgradesVersion1InPlace(t *testing.T) {
	ctx := t.Context()
	pool, err := pgstore.Connect(ctx, pgtest.EmptySchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if done, err := pgstore.MigrateTo(ctx, pool, 1); err != nil || len(done) != 1 {
		t.Fatalf("migrating to version 1 = %v, %v", done, err)
	}
	run := uuid.Must(uuid.NewV7())
	// As version 1 wrote them: kinds 0 (code), 1 (sleep), 2 (failure handler).
	for _, q := range []string{
		`INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved, created_at)
		 VALUES ($1, 'w', 'w@1', 't', 'RUNNING', '{}', 2, now())`,
		`INSERT INTO trellis_tasks (run_id, step, kind, status, pending, plain, max_attempts, updated_at)
		 VALUES ($1, 0, 0, 'COMPLETED', 0, true, 1, now()), ($1, 1, 1, 'PENDING', 1, false, 1, now()),
		        ($1, 2, 2, 'PENDING', 0, false, 1, now())`,
	} {
		if _, err := pool.Exec(ctx, q, run); err != nil {
			t.Fatal(err)
		}
	}
	all, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	done, err := pgstore.Migrate(ctx, pool)
	if err != nil || len(done) != len(all)-1 {
		t.Fatalf("Migrate = %v, %v; want the %d migrations after the first", done, err, len(all)-1)
	}
	var validated bool
	if err := pool.QueryRow(ctx, `SELECT convalidated FROM pg_constraint
		WHERE conname = 'trellis_tasks_kind_check' AND conrelid = 'trellis_tasks'::regclass`).Scan(&validated); err != nil || !validated {
		t.Fatalf("trellis_tasks_kind_check validated = %v, %v", validated, err)
	}
	tasks, err := pgstore.New(pool).ListTasks(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Kind{store.KindCode, store.KindSleep, store.KindOnFailure}
	if len(tasks) != len(want) {
		t.Fatalf("ListTasks = %+v", tasks)
	}
	for i, task := range tasks {
		if task.Kind != want[i] {
			t.Errorf("task %d kind = %v, want %v", i, task.Kind, want[i])
		}
	}
	_, err = pool.Exec(ctx, `UPDATE trellis_tasks SET kind = 9 WHERE run_id = $1 AND step = 0`, run)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "trellis_tasks_kind_check" {
		t.Errorf("setting kind 9 = %v, want trellis_tasks_kind_check violated", err)
	}
}

// A database with a task of a kind no version wrote does not upgrade:
// the migration fails, and leaves the schema as it was.
func TestMigrateRefusesUnknownKinds(t *testing.T) {
	ctx := t.Context()
	pool, err := pgstore.Connect(ctx, pgtest.EmptySchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pgstore.MigrateTo(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO trellis_tasks (run_id, step, kind, status, pending, plain, max_attempts, updated_at)
		VALUES (gen_random_uuid(), 0, 7, 'PENDING', 0, true, 1, now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Migrate(ctx, pool); err == nil {
		t.Fatal("Migrate succeeded over a task of kind 7")
	}
	states, err := pgstore.MigrationStatus(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if applied := s.AppliedAt != nil; applied != (s.Version <= 2) {
			t.Errorf("migration %04d_%s applied = %v", s.Version, s.Name, applied)
		}
	}
}

// Runs under way when schema/0014 is applied (which makes runs count
// their unresolved sinks instead of all their unresolved tasks) complete
// after it, and so does a run that had failed, retried after it: nothing
// is stranded and nothing completes early.
func TestRunsUnderWayCompleteAcrossTheSinksMigration(t *testing.T) {
	ctx := t.Context()
	pool, err := pgstore.Connect(ctx, pgtest.EmptySchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pgstore.MigrateTo(ctx, pool, 13); err != nil {
		t.Fatal(err)
	}
	// As version 13 wrote them. A chain 0 -> 1 -> 2 with 0 completed and 1
	// queued; a diamond 0 -> {1, 2} -> 3 with 0 and 1 completed and 2
	// queued; each with a failure handler (kind 2, no parents). A chain
	// 0 -> 1 that failed at 1.
	chain, diamond, failed := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	// Every statement names all three runs: pgx wants as many arguments as
	// parameters.
	for _, q := range []string{
		`INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved, created_at)
		 SELECT id, 'w', 'w@1', 't', 'RUNNING', '{}', 2, now() FROM unnest(ARRAY[$1, $2, $3]::uuid[]) AS id WHERE id <> $3`,
		`INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved, failed_step, error, created_at, finished_at)
		 SELECT $3, 'w', 'w@1', 't', 'FAILED', '{}', 1, 1, 'boom', now(), now() WHERE $1::uuid <> $2::uuid`,
		`INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, attempt, output, updated_at) VALUES
		 ($1, 0, 0, 'COMPLETED', '{}', 0, true, 1, 1, '{}', now()), ($1, 1, 0, 'QUEUED', '{0}', 0, true, 1, 0, NULL, now()),
		 ($1, 2, 0, 'PENDING', '{1}', 1, true, 1, 0, NULL, now()), ($1, 3, 2, 'PENDING', '{}', 0, false, 1, 0, NULL, now()),
		 ($2, 0, 0, 'COMPLETED', '{}', 0, true, 1, 1, '{}', now()), ($2, 1, 0, 'COMPLETED', '{0}', 0, true, 1, 1, '{}', now()),
		 ($2, 2, 0, 'QUEUED', '{0}', 0, true, 1, 0, NULL, now()), ($2, 3, 0, 'PENDING', '{1,2}', 1, true, 1, 0, NULL, now()),
		 ($2, 4, 2, 'PENDING', '{}', 0, false, 1, 0, NULL, now()),
		 ($3, 0, 0, 'COMPLETED', '{}', 0, true, 1, 1, '{}', now()), ($3, 1, 0, 'FAILED', '{0}', 0, true, 1, 1, NULL, now())`,
		`SELECT trellis_enqueue(ARRAY[$1, $2]::uuid[], ARRAY[1, 2]::smallint[], ARRAY[false, false], ARRAY['t', 't'], ARRAY['w', 'w'],
		                        ARRAY[trellis_lane(2::smallint, true), trellis_lane(2::smallint, true)]) WHERE $3::uuid IS NOT NULL`,
	} {
		if _, err := pool.Exec(ctx, q, chain, diamond, failed); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s := pgstore.New(pool)
	now := time.Now()
	if _, err := s.RetryRuns(ctx, store.RetryRuns{Runs: []store.RetryRun{{Run: failed, Reset: []store.ResetTask{{Step: 1}}}}, Now: now}); err != nil {
		t.Fatal(err)
	}
	children := map[uuid.UUID]map[int][]int{
		chain:   {0: {1}, 1: {2}},
		diamond: {0: {1, 2}, 1: {3}, 2: {3}},
		failed:  {0: {1}},
	}
	finished := map[uuid.UUID]bool{}
	for range 10 {
		claimed, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Limit: 10, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(claimed) == 0 {
			break
		}
		r := store.Results{Now: now}
		for _, c := range claimed {
			r.Completions = append(r.Completions, store.Completion{Attempt: store.Attempt{Key: c.Key, Attempt: c.Attempt},
				Output: []byte(`{}`), Children: children[c.Key.Run][c.Key.Step]})
		}
		res, err := s.Finish(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range res.Finished {
			finished[id] = true
		}
	}
	for name, id := range map[string]uuid.UUID{"chain": chain, "diamond": diamond, "retried": failed} {
		run, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.RunCompleted || !finished[id] {
			t.Errorf("%s run: %s (reported finished: %v), want COMPLETED", name, run.Status, finished[id])
		}
		tasks, err := s.ListTasks(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.Kind != store.KindOnFailure && task.Status != store.TaskCompleted {
				t.Errorf("%s run: task %d is %s", name, task.Key.Step, task.Status)
			}
		}
	}
}

// TestMigrateIntoAMissingSchema: a search_path that names no schema that
// exists is said so, with how to fix it, rather than only as Postgres's
// "no schema has been selected to create in".
func TestMigrateIntoAMissingSchema(t *testing.T) {
	ctx := t.Context()
	pgtest.EmptySchema(t) // skips, or fails, without a database
	pool, err := pgstore.Connect(ctx, pgstore.WithSearchPath(pgtest.URL(), "trellis_no_such_schema"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pgstore.Migrate(ctx, pool)
	if err == nil || !strings.Contains(err.Error(), "search_path, trellis_no_such_schema, names no schema that exists: create it first, CREATE SCHEMA") {
		t.Fatalf("Migrate = %v", err)
	}
}
