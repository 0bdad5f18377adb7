package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// OpsOptions are the options every operations command (runs, workers,
// queue, workflows) takes.
type OpsOptions struct {
	// DatabaseURL is the Postgres connection string; its search_path (if
	// any) picks the schema.
	DatabaseURL string
	// Format is text (aligned tables) or json.
	Format string
	// Clock tells the time for relative times and waits; nil is the
	// system clock. Tests pass a virtual one.
	Clock clock.Clock
	// Bounds bound the work of a listing page under -where (zero fields:
	// ops's defaults); see addWhereBoundFlags.
	Bounds ops.Config
}

// Validate reports options no operations command can run with.
func (o OpsOptions) Validate() error {
	if o.DatabaseURL == "" {
		return errors.New("no database: pass -database-url or set TRELLIS_DATABASE_URL")
	}
	if o.Format != "text" && o.Format != "json" {
		return fmt.Errorf("unknown format %q: use text or json", o.Format)
	}
	if o.Bounds.WhereTimeout < 0 {
		return fmt.Errorf("-where-timeout %v: give a positive duration", o.Bounds.WhereTimeout)
	}
	return nil
}

// addOpsFlags registers -database-url, -format and -json on fs.
func addOpsFlags(fs *flag.FlagSet, o *OpsOptions) {
	addDatabaseURLFlag(fs, &o.DatabaseURL, os.Getenv("TRELLIS_DATABASE_URL"), "Postgres connection `string` (default $TRELLIS_DATABASE_URL)")
	fs.StringVar(&o.Format, "format", "text", "output `format`: text (aligned tables) or json")
	fs.BoolFunc("json", "short for -format json", func(string) error { o.Format = "json"; return nil })
}

// addWhereBoundFlags registers -where-budget and -where-timeout on fs:
// the bounds of each page a -where filter reads.
func addWhereBoundFlags(fs *flag.FlagSet, o *OpsOptions) {
	fs.Uint64Var(&o.Bounds.WhereBudget, "where-budget", ops.DefaultWhereBudget,
		"the CEL `cost` one page of runs may spend evaluating -where, summed over its runs; a page that\n"+
			"spends it stops early and says so, and the next page goes on from there")
	fs.DurationVar(&o.Bounds.WhereTimeout, "where-timeout", ops.DefaultWhereTimeout,
		"how long one page of runs may take reading and evaluating them under -where (a `duration`); a\n"+
			"page that takes it stops early and says so, and the next page goes on from there")
}

func (o OpsOptions) now() time.Time {
	if o.Clock == nil {
		return time.Now()
	}
	return o.Clock.Now()
}

// open connects to the database and returns the operations API on an
// engine that is never started, and a function that disconnects.
// staleAfter, when positive, is how long a worker may go without
// heartbeating before it counts as silent.
func (o OpsOptions) open(ctx context.Context, staleAfter time.Duration) (*ops.Admin, func(), error) {
	pool, err := pgstore.Connect(ctx, o.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	cfg := runtime.Config{Store: pgstore.New(pool), Clock: o.Clock, StaleAfter: staleAfter}
	if staleAfter > 0 {
		cfg.HeartbeatInterval = min(5*time.Second, staleAfter/2)
	}
	engine, err := runtime.New(cfg)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	admin, err := ops.NewWithConfig(engine, o.Bounds)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return admin, pool.Close, nil
}

// opsRun is what every operations command does after parsing its flags:
// validate, connect, do, and turn an error into a message and exit code.
// do returns the exit code for a problem it reported itself, or -1.
func opsRun(ctx context.Context, name string, o OpsOptions, validate error, staleAfter time.Duration, stderr io.Writer,
	do func(*ops.Admin) (int, error),
) int {
	if err := errors.Join(o.Validate(), validate); err != nil {
		fmt.Fprintf(stderr, "trellis %s: %v\n", name, err)
		return ExitUsage
	}
	admin, closeDB, err := o.open(ctx, staleAfter)
	if err != nil {
		fmt.Fprintf(stderr, "trellis %s: %v\n", name, err)
		return ExitProblems
	}
	defer closeDB()
	code, err := do(admin)
	if err != nil {
		// The error may quote what a user or a step stored.
		fmt.Fprintf(stderr, "trellis %s: %s\n", name, termtext.Text(err.Error()))
		return ExitProblems
	}
	if code >= 0 {
		return code
	}
	return ExitOK
}
