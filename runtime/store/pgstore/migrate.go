package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
	"github.com/effectivelabs/trellis/schema"
)

// migrateLock names the advisory lock Migrate holds (see AdvisoryLock in
// queries/coordination.sql); taking and releasing it both use it.
const migrateLock = "migrate"

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
	return migrate(ctx, pool, all)
}

// migrate applies those of the migrations all that are pending; all is
// every migration this binary knows, in order.
func migrate(ctx context.Context, pool *pgxpool.Pool, all []schema.Migration) ([]schema.Migration, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrating: %w", err)
	}
	defer conn.Release()
	q := dbsqlc.New(conn)
	if err := q.AdvisoryLock(ctx, migrateLock); err != nil {
		return nil, fmt.Errorf("pgstore: migrating: taking the migration lock: %w", err)
	}
	defer func() { _ = q.AdvisoryUnlock(context.WithoutCancel(ctx), migrateLock) }()
	// Not in sqlc: this is schema (which sqlc reads too), run as the file says.
	if _, err := conn.Exec(ctx, schema.MigrationsTable); err != nil {
		return nil, fmt.Errorf("pgstore: migrating: %w", err)
	}
	applied, err := appliedVersions(ctx, q)
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
			// Not in sqlc: a migration is many statements, sent as one text.
			if _, err := tx.Conn().PgConn().Exec(ctx, m.SQL).ReadAll(); err != nil {
				return err
			}
			return q.WithTx(tx).MigrationRecord(ctx, dbsqlc.MigrationRecordParams{Version: int32(m.Version), Name: m.Name})
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
	q := dbsqlc.New(pool)
	exists, err := q.MigrationsTableExists(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: migration status: %w", err)
	}
	applied := map[int]time.Time{}
	if exists {
		if applied, err = appliedVersions(ctx, q); err != nil {
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

func appliedVersions(ctx context.Context, q *dbsqlc.Queries) (map[int]time.Time, error) {
	rows, err := q.MigrationsApplied(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading applied migrations: %w", err)
	}
	out := make(map[int]time.Time, len(rows))
	for _, r := range rows {
		out[int(r.Version)] = r.AppliedAt
	}
	return out, nil
}
