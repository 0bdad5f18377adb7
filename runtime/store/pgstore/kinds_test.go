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
)

// Go's mapping of kinds and the schema's names for them agree.
func TestKindsMatchTheSchema(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	var code, sleep, onFailure int16
	if err := pool.QueryRow(ctx, `SELECT trellis_kind_code(), trellis_kind_sleep(), trellis_kind_on_failure()`).Scan(&code, &sleep, &onFailure); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		kind store.Kind
		db   int16
	}{{store.KindCode, code}, {store.KindSleep, sleep}, {store.KindOnFailure, onFailure}} {
		if got := pgstore.KindToDB(tt.kind); got != tt.db {
			t.Errorf("KindToDB(%v) = %d, want %d", tt.kind, got, tt.db)
		}
		if got := pgstore.KindFromDB(tt.db); got != tt.kind {
			t.Errorf("KindFromDB(%d) = %v, want %v", tt.db, got, tt.kind)
		}
	}
	// An unknown kind is refused by the column's check.
	_, err := pgstore.New(pool).CreateRuns(ctx, store.CreateRuns{Now: time.Now(), Runs: []store.NewRun{{
		ID: uuid.Must(uuid.NewV7()), Workflow: "w", Version: "w@1", Tenant: "t", Input: []byte(`{}`),
		Tasks: []store.NewTask{{Step: 0, Kind: store.Kind(9), MaxAttempts: 1}},
	}}})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "trellis_tasks_kind_check" || !errors.Is(err, store.ErrInvalidData) {
		t.Errorf("creating a task of kind 9 = %v, want trellis_tasks_kind_check violated", err)
	}
}

// The kind functions cost what the literals did: the planner folds them
// into constants, in generic plans (prepared statements) too.
func TestKindFunctionsAreFoldedIntoConstants(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE kinds (uuid) AS SELECT step FROM trellis_tasks
		 WHERE run_id = $1 AND kind <> trellis_kind_on_failure() AND kind <> trellis_kind_sleep() AND kind = trellis_kind_code()`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `EXPLAIN (VERBOSE) EXECUTE kinds ('00000000-0000-0000-0000-000000000000')`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	p := plan.String()
	if strings.Contains(p, "trellis_kind") || !strings.Contains(p, "'2'::smallint") || !strings.Contains(p, "'0'::smallint") {
		t.Errorf("the kind functions were not folded into constants:\n%s", p)
	}
}
