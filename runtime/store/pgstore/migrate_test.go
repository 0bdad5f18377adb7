package pgstore_test

import (
	"errors"
	"testing"

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
