package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/schema"
)

const migrationsTable = `CREATE TABLE IF NOT EXISTS trellis_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// MigrationState is a migration and whether it has been applied.
type MigrationState struct {
	Version   int
	Name      string
	AppliedAt *time.Time // nil when pending
}

// Migrate applies the pending migrations, each in its own transaction,
// while holding an advisory lock so that processes starting together do
// not race. It returns the migrations it applied. It refuses to run
// against a schema newer than this binary knows.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]schema.Migration, error) {
	all, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrating: %w", err)
	}
	defer conn.Release()
	const lock = `SELECT pg_advisory_lock(hashtextextended(current_schema() || '.trellis.migrate', 0))`
	const unlock = `SELECT pg_advisory_unlock(hashtextextended(current_schema() || '.trellis.migrate', 0))`
	if _, err := conn.Exec(ctx, lock); err != nil {
		return nil, fmt.Errorf("pgstore: migrating: taking the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), unlock) }()
	if _, err := conn.Exec(ctx, migrationsTable); err != nil {
		return nil, fmt.Errorf("pgstore: migrating: %w", err)
	}
	applied, err := appliedVersions(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}
	for v := range applied {
		if v > len(all) {
			return nil, fmt.Errorf("pgstore: the database schema is at version %d, newer than this binary's %d; upgrade the binary", v, len(all))
		}
	}
	var done []schema.Migration
	for _, m := range all {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Conn().PgConn().Exec(ctx, m.SQL).ReadAll(); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO trellis_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("pgstore: applying migration %04d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m)
	}
	return done, nil
}

// MigrationStatus lists every migration this binary knows with when it was
// applied.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) ([]MigrationState, error) {
	all, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migration status: %w", err)
	}
	defer conn.Release()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('trellis_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("pgstore: migration status: %w", err)
	}
	applied := map[int]time.Time{}
	if exists {
		if applied, err = appliedVersions(ctx, conn.Conn()); err != nil {
			return nil, err
		}
	}
	out := make([]MigrationState, len(all))
	for i, m := range all {
		out[i] = MigrationState{Version: m.Version, Name: m.Name}
		if at, ok := applied[m.Version]; ok {
			out[i].AppliedAt = &at
		}
	}
	return out, nil
}

func appliedVersions(ctx context.Context, conn *pgx.Conn) (map[int]time.Time, error) {
	rows, err := conn.Query(ctx, `SELECT version, applied_at FROM trellis_migrations`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading applied migrations: %w", err)
	}
	defer rows.Close()
	out := map[int]time.Time{}
	for rows.Next() {
		var v int
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		out[v] = at
	}
	return out, rows.Err()
}
