package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestServerStopsAndStarts(t *testing.T) {
	s := pgtest.NewServer(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	s.Stop("fast")
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a connection survived the server's stop")
	}
	s.Start()
	pool, _ := pgtest.PoolWithSchemaAt(t, s.URL())
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM trellis_runs").Scan(&n); err != nil || n != 0 {
		t.Errorf("a migrated schema on the restarted server: %d runs, %v", n, err)
	}
}
