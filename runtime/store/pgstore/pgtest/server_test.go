package pgtest_test

import (
	"context"
	"fmt"
	"strings"
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

// TestDatabase: a database of the test's own, named in connection strings
// of either form, dropped when the test ends.
func TestDatabase(t *testing.T) {
	base, err := pgx.ParseConfig(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	keyValue := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", base.Host, base.Port, base.User, base.Database)
	if base.Password != "" {
		keyValue += " password=" + base.Password
	}
	for form, url := range map[string]string{"url": pgtest.URL(), "key=value": keyValue} {
		t.Run(form, func(t *testing.T) {
			t.Setenv("TRELLIS_DATABASE_URL", url)
			var name string
			t.Run("using it", func(t *testing.T) {
				conn, err := pgx.Connect(t.Context(), pgtest.Database(t))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
				var tables int
				err = conn.QueryRow(t.Context(), `SELECT current_database(),
					(SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public')`).Scan(&name, &tables)
				if err != nil || !strings.HasPrefix(name, "trellis_test_") || tables != 0 {
					t.Fatalf("connected to database %q with %d tables, %v; want a new, empty one", name, tables, err)
				}
			})
			conn, err := pgx.Connect(t.Context(), pgtest.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var exists bool
			if err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
				t.Errorf("database %s after its test: exists %v, %v", name, exists, err)
			}
		})
	}
}
