// Package pgtest gives tests an isolated, migrated Postgres schema.
//
// The database comes from TRELLIS_DATABASE_URL (default: the local server,
// database test). Each call to Pool creates a schema of its own, migrates
// it, and drops it when the test ends, so tests (and test packages running
// in parallel) never see each other's rows. Without a reachable database
// the test is skipped, unless TRELLIS_REQUIRE_DB=1, which CI sets so that
// Postgres tests fail instead of silently not running.
//
// Tests of programs that use a database as a whole (every schema in it)
// use Database instead: a database of their own on the same server.
//
// Tests that stop, crash or restart Postgres use a Server instead: a
// throwaway cluster of their own, made with initdb on a free port, so
// they never disturb other tests or the machine's server.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// DefaultURL is used when TRELLIS_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is the database tests connect to.
func URL() string {
	if u := os.Getenv("TRELLIS_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether a missing database fails tests (CI) rather than
// skipping them.
func Required() bool { return os.Getenv("TRELLIS_REQUIRE_DB") == "1" }

// EmptySchema creates a schema that is not migrated, dropped when the test
// ends, and returns a connection string whose connections use it: for
// testing migrations and commands that take a connection string.
func EmptySchema(t testing.TB) string {
	t.Helper()
	schema := newSchema(t, URL())
	return pgstore.WithSearchPath(URL(), schema)
}

// Pool returns a pool whose connections use a fresh, migrated schema.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, _ := PoolWithSchema(t)
	return pool
}

// PoolWithSchema is Pool, also returning the schema's name (for tests that
// start other processes on the same schema).
func PoolWithSchema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	return PoolWithSchemaAt(t, URL())
}

// PoolWithSchemaAt is PoolWithSchema on the database at url (a Server's,
// for one).
func PoolWithSchemaAt(t testing.TB, url string) (*pgxpool.Pool, string) {
	t.Helper()
	schema := newSchema(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := ConnectAt(ctx, url, schema)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatalf("pgtest: migrating: %v", err)
	}
	return pool, schema
}

// PlainPool is Pool on a pool made as a user might make their own, with
// pgxpool.New and without pgstore.Configure.
func PlainPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := EmptySchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatalf("pgtest: migrating: %v", err)
	}
	return pool
}

// newSchema creates an empty schema, dropped when the test ends; it skips
// or fails the test when there is no database (see Required).
func newSchema(t testing.TB, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := connectAdmin(ctx, t, url)
	defer admin.Close(ctx)
	schema := "trellis_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: creating schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("pgtest: dropping schema %s: %v", schema, pgstore.RedactErr(err, url))
			return
		}
		defer conn.Close(ctx)
		// A statement of the test's engines still finishing can deadlock
		// with the drop, which takes every table's lock in an order of its
		// own (seen once under load): the drop is the victim, so try again.
		for try := 1; ; try++ {
			_, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			var pgErr *pgconn.PgError
			if err == nil || try == 5 || !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
				if err != nil {
					t.Errorf("pgtest: dropping schema %s: %v", schema, err)
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return schema
}

// Database creates an empty database on URL's server, dropped (with its
// sessions ended) when the test ends, and returns URL with the database
// changed to it: for tests of programs that look at or create schemas
// beyond their own, such as the examples' demos, which must leave every
// other schema of the database alone. It skips or fails the test when
// there is no database (see Required).
func Database(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := connectAdmin(ctx, t, URL())
	defer admin.Close(ctx)
	name := "trellis_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: creating database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, URL())
		if err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, pgstore.RedactErr(err, URL()))
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	u, err := withDatabase(URL(), name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// withDatabase returns the connection string conn (URL or key=value form)
// naming the database name instead of its own.
func withDatabase(conn, name string) (string, error) {
	if !strings.Contains(conn, "://") {
		return conn + " dbname=" + name, nil // the last value of a key wins
	}
	u, err := url.Parse(conn)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	u.RawPath = ""
	q := u.Query()
	q.Del("dbname")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// connectAdmin connects to url for creating and dropping schemas and
// databases; it skips or fails the test when there is no database (see
// Required).
func connectAdmin(ctx context.Context, t testing.TB, url string) *pgx.Conn {
	t.Helper()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		shown, err := pgstore.Redact(url), pgstore.RedactErr(err, url) // test logs are output too
		if Required() {
			t.Fatalf("pgtest: Postgres is required (TRELLIS_REQUIRE_DB=1) but not reachable at %s: %v", shown, err)
		}
		t.Skipf("pgtest: no Postgres at %s (%v); set TRELLIS_DATABASE_URL, or TRELLIS_REQUIRE_DB=1 to fail instead", shown, err)
	}
	return admin
}

// Connect opens a pool on URL whose connections use the given schema.
func Connect(ctx context.Context, schema string) (*pgxpool.Pool, error) {
	return ConnectAt(ctx, URL(), schema)
}

// ConnectAt opens a pool on url whose connections use the given schema.
func ConnectAt(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	// Tests run several engines on one pool; give them room.
	cfg.MaxConns = 16
	pgstore.Configure(cfg) // as pgstore.Connect does
	return pgxpool.NewWithConfig(ctx, cfg)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
