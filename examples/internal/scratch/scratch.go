// Package scratch gives an example's -postgres demo a Postgres schema of
// its own, so that the demo's virtual clock never moves anyone else's
// runs.
//
// The demos run their engine on a virtual clock that jumps to the next
// durable timer of the store, and fire every timer due at that time. On
// a schema that other runs share, that would wake their sleeps days early
// and record finish times in the future. So a demo creates a schema named
// trellis_demo_<demo>_<random hex>, migrates it, runs there (the pool's
// search_path), and drops it when it ends, on error and on Ctrl-C too
// (Run; or Open and Close).
// Two demos at once get two schemas; the database's other schemas are
// never read or written.
//
// A demo killed with SIGKILL cannot drop its schema. While a demo runs,
// a session of its own holds an advisory lock named after its schema;
// the next demo to start drops every demo schema whose lock nobody holds,
// since the demo that made it is gone.
package scratch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Prefix starts the name of every schema a demo makes:
// trellis_demo_<demo>_<12 hex digits>.
const Prefix = "trellis_demo_"

// namePattern matches the names Open gives schemas, and only those: the
// schemas it may drop as abandoned.
const namePattern = `^` + Prefix + `[a-z]+_[0-9a-f]{12}$`

// demoName is what a demo's name may be.
var demoName = regexp.MustCompile(`^[a-z]+$`)

// lockKey is the SQL for the advisory lock key of the schema named $1.
const lockKey = `hashtextextended('trellis_demo.' || $1::text, 0)`

// Schema is a migrated schema of one demo's own, and a pool whose
// connections use it.
type Schema struct {
	// Name is the schema's name.
	Name string
	// Pool's connections use the schema (their search_path).
	Pool *pgxpool.Pool
	// Dropped names the schemas of earlier demos, killed before they
	// could drop their own, that Open dropped.
	Dropped []string
	hold    *pgx.Conn // holds the schema's advisory lock while the demo runs
}

// Run runs a demo in a schema of its own: it opens one (see Open) for
// the demo named demo in the database at url, calls fn with a store on
// it, and drops it however fn ends, saying so on out.
func Run(ctx context.Context, url, demo string, out io.Writer, fn func(store.Store) error) error {
	s, err := Open(ctx, url, demo)
	if err != nil {
		return err
	}
	for _, name := range s.Dropped {
		fmt.Fprintf(out, "dropped schema %s, left by a demo that was killed\n", name)
	}
	fmt.Fprintf(out, "running in a schema of its own: %s\n", s.Name)
	err = fn(pgstore.New(s.Pool))
	if closeErr := s.Close(ctx); closeErr != nil {
		return errors.Join(err, closeErr)
	}
	fmt.Fprintf(out, "dropped schema %s\n", s.Name)
	return err
}

// Open creates a schema for the demo named demo (lower-case letters) in
// the database at url, migrates it and opens a pool on it, after
// dropping the schemas of demos that were killed. Close drops it.
func Open(ctx context.Context, url, demo string) (s *Schema, err error) {
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("no database: pass -database-url or set $TRELLIS_DATABASE_URL")
	}
	if !demoName.MatchString(demo) {
		return nil, fmt.Errorf("scratch: demo name %q is not lower-case letters", demo)
	}
	s = &Schema{Name: Prefix + demo + "_" + randomHex(6)}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close(ctx))
			s = nil
		}
	}()
	if s.hold, err = pgx.Connect(ctx, url); err != nil {
		return s, fmt.Errorf("connecting: %w", pgstore.RedactErr(err, url))
	}
	// Locked before it exists, so that no other demo takes it for
	// abandoned.
	if _, err = s.hold.Exec(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`, s.Name); err != nil {
		return s, fmt.Errorf("locking schema %s: %w", s.Name, err)
	}
	if s.Dropped, err = dropAbandoned(ctx, s.hold); err != nil {
		return s, err
	}
	if _, err = s.hold.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s.Name}.Sanitize()); err != nil {
		return s, fmt.Errorf("creating schema %s (the demo runs in a schema of its own, so its role needs the CREATE privilege on the database): %w", s.Name, err)
	}
	if s.Pool, err = pgstore.Connect(ctx, pgstore.WithSearchPath(url, s.Name)); err != nil {
		return s, err
	}
	if _, err = pgstore.Migrate(ctx, s.Pool); err != nil {
		return s, err
	}
	return s, nil
}

// dropAbandoned drops the demo schemas whose lock no session holds.
func dropAbandoned(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT nspname::text FROM pg_namespace WHERE nspname ~ $1 ORDER BY nspname`, namePattern)
	if err != nil {
		return nil, fmt.Errorf("listing demo schemas: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing demo schemas: %w", err)
	}
	var dropped []string
	for _, name := range names {
		var free bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+lockKey+`)`, name).Scan(&free); err != nil {
			return dropped, fmt.Errorf("checking schema %s: %w", name, err)
		}
		if !free {
			continue // its demo is running
		}
		_, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
		if _, unlockErr := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+lockKey+`)`, name); err == nil {
			err = unlockErr
		}
		if err != nil {
			return dropped, fmt.Errorf("dropping schema %s, left by a demo that was killed: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// Close closes the pool and drops the schema, even when ctx is done (the
// demo was interrupted).
func (s *Schema) Close(ctx context.Context) error {
	if s.Pool != nil {
		s.Pool.Close()
	}
	if s.hold == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := s.hold.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.Name}.Sanitize()+" CASCADE")
	if err != nil {
		err = fmt.Errorf("dropping schema %s: %w", s.Name, err)
	}
	// Closing the session releases the lock.
	return errors.Join(err, s.hold.Close(ctx))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
