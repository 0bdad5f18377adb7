// Package pgstore is the PostgreSQL store: several engines in several
// processes share one database and coordinate through it alone.
//
// Tasks are claimed with FOR UPDATE SKIP LOCKED in fair order; results are
// recorded in batches, one statement per kind of result; a worker's running
// tasks hold leases it heartbeats; durable timers are rows; one leader,
// holding an advisory lock on a dedicated connection, fires timers and
// recovers the tasks of dead workers; LISTEN/NOTIFY wakes idle workers.
// The schema (the migrations, and the functions and triggers of
// schema/functions) lives in the schema package and is applied by
// Migrate; docs/postgres-schema.md says how, and how to change it.
//
// The generated queries (internal/dbsqlc, from queries/ by sqlc) stay
// private: this package converts their rows into store types and database
// errors into store errors.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// Store is the Postgres store.Store.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

var _ store.Store = (*Store)(nil)

// New returns a store on the user's pool. The schema must have been
// migrated (see Migrate). The pool's connections decide the schema Trellis
// uses (its search_path), so several Trellis schemas can share a database.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbsqlc.New(pool)}
}

// DefaultMaxConns is the size of a pool Connect opens when the connection
// string does not say (pool_max_conns).
const DefaultMaxConns = 16

// Connect opens a pool for a connection string (a postgres:// URL or
// key=value pairs), checking that the database answers.
//
// An engine uses up to five of the pool's connections at once (claiming,
// recording results, heartbeating, firing timers, housekeeping), plus two
// connections of its own (LISTEN, and the leader's lock). Steps that use
// the same pool need theirs on top. Unless the connection string sets
// pool_max_conns, the pool holds up to DefaultMaxConns connections
// (pgxpool's own default, 4 on a 2-core machine, is too few to share).
//
// An empty connection string is refused rather than left to libpq's
// defaults (the PG* environment variables, a local socket), which would
// connect somewhere the caller did not name. Its errors never hold the
// connection string's password (see RedactErr).
func Connect(ctx context.Context, connString string) (*pgxpool.Pool, error) {
	if strings.TrimSpace(connString) == "" {
		return nil, errors.New("pgstore: no connection string: pass a postgres:// URL or key=value pairs (for example $TRELLIS_DATABASE_URL)")
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parsing connection string: %w", RedactErr(err, connString))
	}
	if !strings.Contains(connString, "pool_max_conns") && cfg.MaxConns < DefaultMaxConns {
		cfg.MaxConns = DefaultMaxConns
	}
	Configure(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connecting: %w", RedactErr(err, connString))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: connecting: %w", RedactErr(err, connString))
	}
	return pool, nil
}

// WithSearchPath adds a search_path to a connection string (URL or
// key=value form), so that the pool's connections use that schema: one
// way to keep several Trellis schemas in one database.
func WithSearchPath(conn, schema string) string {
	if strings.Contains(conn, "://") {
		sep := "?"
		if strings.Contains(conn, "?") {
			sep = "&"
		}
		return conn + sep + "search_path=" + schema
	}
	return conn + " search_path=" + schema
}

// Tx wraps a caller's transaction for runtime.WithTx: a run triggered
// with runtime.WithTx(pgstore.Tx(tx)) is created inside tx (in a savepoint,
// so that a failure leaves tx usable) and exists if and only if tx
// commits.
func Tx(tx pgx.Tx) store.Tx { return callerTx{tx} }

type callerTx struct{ tx pgx.Tx }

func (callerTx) StoreTx() {}

// inTx runs fn in a transaction on the pool.
func (s *Store) inTx(ctx context.Context, fn func(q *dbsqlc.Queries) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(s.q.WithTx(tx)) })
}

// notFound maps "no rows" to store.ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return err
}

// isUndefinedTable reports a missing table: the schema is not migrated.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

// isInvalidData reports an error about the data itself: a data exception
// (SQLSTATE class 22, such as text that is not valid UTF-8), an integrity
// violation (class 23), or a value past one of Postgres's limits (class
// 54, such as a key too long for its index).
func isInvalidData(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) &&
		(strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23") || strings.HasPrefix(pgErr.Code, "54"))
}

// isTransient reports a passing fault: the connection was lost or could
// not be made (class 08, a network error, the server closing it), the
// server is shutting down or starting (57P01-57P03), out of connections
// (53300), or the transaction lost a serialization conflict or deadlock
// (40001, 40P01). The same operation may succeed when retried.
func isTransient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"),
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03",
			pgErr.Code == "53300", pgErr.Code == "40001", pgErr.Code == "40P01":
			return true
		}
		return false
	}
	// Connecting failed, the network failed under a query, or pgx knows
	// the query was never sent (a connection found closed, for one).
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// wrap adds context to a database error, marks errors about the data as
// store.ErrInvalidData and passing faults as store.ErrTransient, and hints
// when the schema is missing.
func wrap(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case isUndefinedTable(err):
		return fmt.Errorf("pgstore: %s: %w (has the schema been migrated? run `trellis migrate up`)", op, err)
	case isInvalidData(err):
		return fmt.Errorf("pgstore: %s: %w: %w", op, store.ErrInvalidData, err)
	case isTransient(err):
		return fmt.Errorf("pgstore: %s: %w: %w", op, store.ErrTransient, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}
