package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// then the functions (schema.FunctionFiles) that changed since they were
// last applied, all of them after a migration, in one transaction; all
// while holding an advisory lock so that processes starting together do
// not race. It returns the migrations it applied (FunctionStatus tells
// when each function file was applied). It refuses to run against a
// schema newer than this binary knows, and leaves alone functions applied
// by a binary of a higher schema.FunctionsVersion.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]schema.Migration, error) {
	all, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	functions, err := schema.FunctionFiles()
	if err != nil {
		return nil, err
	}
	return migrate(ctx, pool, all, functions)
}

// migrate applies those of the migrations all that are pending, then
// those of the function files that need it; all is every migration this
// binary knows, in order, and functions every function file, in order
// (none for a binary from before schema/functions).
func migrate(ctx context.Context, pool *pgxpool.Pool, all []schema.Migration, functions []schema.FunctionFile) ([]schema.Migration, error) {
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
	for _, table := range []string{schema.MigrationsTable, schema.FunctionsTable} {
		if _, err := conn.Exec(ctx, table); err != nil {
			return nil, noSchema(ctx, conn.Conn(), fmt.Errorf("pgstore: migrating: %w", err))
		}
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
	if len(functions) == 0 {
		return done, nil
	}
	if err := applyFunctions(ctx, conn.Conn(), functions, len(done) > 0); err != nil {
		return done, err
	}
	return done, nil
}

// applyFunctions applies, in one transaction and in order, the function
// files whose checksum differs from the one recorded when they were last
// applied, or every file when all is set (after migrations, which may
// have dropped what a file made, a trigger with its table). It changes
// nothing when a binary of a higher FunctionsVersion applied them: that
// binary's functions work with this schema (a migration would have come
// with any that did not), and are newer.
func applyFunctions(ctx context.Context, conn *pgx.Conn, functions []schema.FunctionFile, all bool) error {
	q := dbsqlc.New(conn)
	rows, err := q.FunctionFilesApplied(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: reading applied function files: %w", err)
	}
	recorded := make(map[string]dbsqlc.TrellisFunctionFile, len(rows))
	stale := false // a row of another version, or of a file this binary does not have
	for _, r := range rows {
		if r.Version > schema.FunctionsVersion {
			return nil
		}
		recorded[r.Name] = r
		stale = stale || r.Version != schema.FunctionsVersion
	}
	var pending []schema.FunctionFile
	names := make([]string, len(functions))
	for i, f := range functions {
		names[i] = f.Name
		if all || recorded[f.Name].Checksum != f.Checksum {
			pending = append(pending, f)
		}
		delete(recorded, f.Name)
	}
	if len(pending) == 0 && !stale && len(recorded) == 0 {
		return nil
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, f := range pending {
			// Not in sqlc, as a migration: many statements, sent as one text.
			if _, err := tx.Conn().PgConn().Exec(ctx, f.SQL).ReadAll(); err != nil {
				return fmt.Errorf("schema/functions/%s: %w", f.Name, err)
			}
			if err := q.WithTx(tx).FunctionFileRecord(ctx, dbsqlc.FunctionFileRecordParams{
				Name: f.Name, Checksum: f.Checksum, Version: schema.FunctionsVersion,
			}); err != nil {
				return fmt.Errorf("recording schema/functions/%s: %w", f.Name, err)
			}
		}
		return q.WithTx(tx).FunctionFilesKeep(ctx, dbsqlc.FunctionFilesKeepParams{Version: schema.FunctionsVersion, Names: names})
	})
	if err != nil {
		return fmt.Errorf("pgstore: applying functions: %w", err)
	}
	return nil
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

// FunctionFileState is a file of schema/functions and whether the
// database holds what it defines as this binary has it.
type FunctionFileState struct {
	Name      string
	AppliedAt *time.Time // when it was last applied; nil when never
	// Current is true when the file was last applied as this binary has
	// it (same checksum).
	Current bool
}

// FunctionsState is the database's functions against this binary's.
type FunctionsState struct {
	// Version is the schema.FunctionsVersion of the binary that last
	// applied the functions, 0 when none has. Above this binary's,
	// Migrate leaves them alone.
	Version int
	// Files are this binary's function files, in the order they apply.
	Files []FunctionFileState
}

// Current reports whether the database holds this binary's functions,
// or a newer binary's.
func (s FunctionsState) Current() bool {
	if s.Version > schema.FunctionsVersion {
		return true
	}
	for _, f := range s.Files {
		if !f.Current {
			return false
		}
	}
	return s.Version == schema.FunctionsVersion
}

// FunctionStatus compares the function files the database last applied
// with this binary's.
func FunctionStatus(ctx context.Context, pool *pgxpool.Pool) (FunctionsState, error) {
	functions, err := schema.FunctionFiles()
	if err != nil {
		return FunctionsState{}, err
	}
	q := dbsqlc.New(pool)
	exists, err := q.FunctionFilesTableExists(ctx)
	if err != nil {
		return FunctionsState{}, fmt.Errorf("pgstore: function status: %w", err)
	}
	var rows []dbsqlc.TrellisFunctionFile
	if exists {
		if rows, err = q.FunctionFilesApplied(ctx); err != nil {
			return FunctionsState{}, fmt.Errorf("pgstore: function status: %w", err)
		}
	}
	out := FunctionsState{Files: make([]FunctionFileState, len(functions))}
	recorded := make(map[string]dbsqlc.TrellisFunctionFile, len(rows))
	for _, r := range rows {
		recorded[r.Name] = r
		out.Version = max(out.Version, int(r.Version))
	}
	for i, f := range functions {
		out.Files[i] = FunctionFileState{Name: f.Name}
		if r, ok := recorded[f.Name]; ok {
			at := r.AppliedAt
			out.Files[i].AppliedAt = &at
			out.Files[i].Current = r.Checksum == f.Checksum
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

// noSchema adds a hint to err when it says that the connection's
// search_path names no schema that exists (SQLSTATE 3F000): Migrate
// creates tables, not the schema they go in.
func noSchema(ctx context.Context, conn *pgx.Conn, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3F000" {
		return err
	}
	var path string
	if conn.QueryRow(ctx, "SHOW search_path").Scan(&path) != nil {
		path = "?"
	}
	return fmt.Errorf("%w (the connection's search_path, %s, names no schema that exists: create it first, CREATE SCHEMA name, or correct search_path)", err, path)
}
