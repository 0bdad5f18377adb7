package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// MigrateOptions are the options of trellis migrate.
type MigrateOptions struct {
	// DatabaseURL is the Postgres connection string; its search_path (if
	// any) picks the schema.
	DatabaseURL string
	// Action is up (apply pending migrations) or status (list them).
	Action string
}

// Validate reports options migrate cannot run with.
func (o MigrateOptions) Validate() error {
	if o.DatabaseURL == "" {
		return fmt.Errorf("no database: pass -database-url or set TRELLIS_DATABASE_URL")
	}
	if o.Action != "up" && o.Action != "status" {
		return fmt.Errorf("unknown action %q: use up or status", o.Action)
	}
	return nil
}

// MigrateCommand is trellis migrate: it applies the embedded Postgres
// migrations, or shows which are applied.
type MigrateCommand struct{}

// Name implements Command.
func (MigrateCommand) Name() string { return "migrate" }

// Summary implements Command.
func (MigrateCommand) Summary() string { return "apply the Postgres schema (up) or show its status" }

// Run implements Command.
func (c MigrateCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[-database-url URL] up|status",
		"Migrate applies the Postgres migrations Trellis embeds (up), each in its own\ntransaction under an advisory lock, or lists them with when each was applied\n(status). The connection string's search_path picks the schema.")
	opts := MigrateOptions{}
	fs.StringVar(&opts.DatabaseURL, "database-url", os.Getenv("TRELLIS_DATABASE_URL"), "Postgres connection `string` (default $TRELLIS_DATABASE_URL)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "trellis migrate: say up or status")
		fs.Usage()
		return ExitUsage
	}
	opts.Action = fs.Arg(0)
	return Migrate(ctx, opts, stdout, stderr)
}

// Migrate runs trellis migrate with opts and returns its exit code.
func Migrate(ctx context.Context, opts MigrateOptions, stdout, stderr io.Writer) int {
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitUsage
	}
	pool, err := pgstore.Connect(ctx, opts.DatabaseURL)
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	defer pool.Close()
	if opts.Action == "up" {
		applied, err := pgstore.Migrate(ctx, pool)
		for _, m := range applied {
			fmt.Fprintf(stdout, "applied %04d_%s\n", m.Version, m.Name)
		}
		if err != nil {
			fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
			return ExitProblems
		}
		if len(applied) == 0 {
			fmt.Fprintln(stdout, "schema is up to date")
		}
		return ExitOK
	}
	states, err := pgstore.MigrationStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	pending := 0
	for _, s := range states {
		when := "pending"
		if s.AppliedAt != nil {
			when = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		} else {
			pending++
		}
		fmt.Fprintf(stdout, "%04d_%-20s %s\n", s.Version, s.Name, when)
	}
	if pending > 0 {
		fmt.Fprintf(stdout, "%d pending: run trellis migrate up\n", pending)
	}
	return ExitOK
}
