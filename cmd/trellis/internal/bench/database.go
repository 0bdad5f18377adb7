package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// SchemaPrefix starts the name of every schema the bench creates.
const SchemaPrefix = "trellis_bench_"

// database is a fresh, migrated schema for one scenario, and a pool on it
// for the harness.
type database struct {
	url    string // the connection string, without search_path
	schema string
	pool   *pgxpool.Pool
}

// openDatabase creates a schema named SchemaPrefix plus random hex,
// migrates it and opens a pool on it. Close drops it.
func openDatabase(ctx context.Context, url string) (*database, error) {
	schema := SchemaPrefix + randomHex(6)
	if err := adminExec(ctx, url, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	db := &database{url: url, schema: schema}
	cfg, err := pgxpool.ParseConfig(pgstore.WithSearchPath(url, schema))
	if err == nil {
		// The harness triggers, polls and reads results at once.
		cfg.MaxConns = 8
		pgstore.Configure(cfg)
		db.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	}
	if err != nil {
		_ = db.close(context.WithoutCancel(ctx), false)
		return nil, fmt.Errorf("connecting to schema %s: %w", schema, pgstore.RedactErr(err, url))
	}
	if _, err := pgstore.Migrate(ctx, db.pool); err != nil {
		_ = db.close(context.WithoutCancel(ctx), false)
		return nil, err
	}
	return db, nil
}

// close closes the pool and drops the schema unless keep.
func (db *database) close(ctx context.Context, keep bool) error {
	if db.pool != nil {
		db.pool.Close()
	}
	if keep {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := adminExec(ctx, db.url, "DROP SCHEMA "+db.schema+" CASCADE"); err != nil {
		return fmt.Errorf("dropping schema %s: %w", db.schema, err)
	}
	return nil
}

// adminExec runs one statement on a connection of its own.
func adminExec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return pgstore.RedactErr(err, url)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
