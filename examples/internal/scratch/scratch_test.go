package scratch_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/examples/internal/scratch"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// setup returns a database of the test's own, with a schema of a user's
// whose name starts like a demo's, and a connection to it.
func setup(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	db := pgtest.Database(t)
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA trellis_demo_mine"); err != nil {
		t.Fatal(err)
	}
	return db, conn
}

func schemas(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT nspname::text FROM pg_namespace
		WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func TestOpenMigratesASchemaAndCloseDropsIt(t *testing.T) {
	db, conn := setup(t)
	ctx := t.Context()
	s, err := scratch.Open(ctx, db, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^trellis_demo_orders_[0-9a-f]{12}$`).MatchString(s.Name) {
		t.Errorf("schema name %q", s.Name)
	}
	var where string
	if err := s.Pool.QueryRow(ctx, "SELECT to_regclass('trellis_runs')::text").Scan(&where); err != nil || where != "trellis_runs" {
		t.Errorf("trellis_runs on the pool: %q, %v", where, err)
	}
	if err := s.Pool.QueryRow(ctx, "SELECT current_schema()").Scan(&where); err != nil || where != s.Name {
		t.Errorf("the pool's schema is %q (%v), want %s", where, err, s.Name)
	}
	if got := schemas(t, conn); !slices.Equal(got, []string{"public", "trellis_demo_mine", s.Name}) {
		t.Errorf("schemas while the demo runs: %v", got)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := schemas(t, conn); !slices.Equal(got, []string{"public", "trellis_demo_mine"}) {
		t.Errorf("schemas after Close: %v", got)
	}
}

// TestCloseAfterInterrupt: a demo interrupted (its context canceled)
// still drops its schema.
func TestCloseAfterInterrupt(t *testing.T) {
	db, conn := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	s, err := scratch.Open(ctx, db, "orders")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := schemas(t, conn); !slices.Equal(got, []string{"public", "trellis_demo_mine"}) {
		t.Errorf("schemas after Close: %v", got)
	}
}

// TestOpenDropsTheSchemasOfKilledDemos: a demo killed (its sessions gone
// without dropping its schema) leaves its schema to the next demo, which
// drops it; a demo still running keeps its own, and schemas not named as
// a demo's are left alone.
func TestOpenDropsTheSchemasOfKilledDemos(t *testing.T) {
	db, conn := setup(t)
	ctx := t.Context()
	running, err := scratch.Open(ctx, db, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close(ctx)
	killed, err := scratch.Open(ctx, db, "fulfilment")
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.Kill(ctx, conn); err != nil {
		t.Fatal(err)
	}
	next, err := scratch.Open(ctx, db, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	if !slices.Equal(next.Dropped, []string{killed.Name}) {
		t.Errorf("Dropped = %v, want the killed demo's %s", next.Dropped, killed.Name)
	}
	want := []string{"public", running.Name, next.Name, "trellis_demo_mine"}
	slices.Sort(want)
	if got := schemas(t, conn); !slices.Equal(got, want) {
		t.Errorf("schemas: %v, want %v", got, want)
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct{ url, demo string }{
		{"", "orders"},
		{"  ", "orders"},
		{pgtest.URL(), "Orders; DROP SCHEMA public"},
		{pgtest.URL(), ""},
	} {
		if s, err := scratch.Open(t.Context(), tc.url, tc.demo); err == nil {
			_ = s.Close(t.Context())
			t.Errorf("Open(%q, %q) succeeded", tc.url, tc.demo)
		}
	}
}
