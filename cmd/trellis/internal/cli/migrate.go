package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/schema"
)

// MigrateOptions are the options of trellis migrate.
type MigrateOptions struct {
	// DatabaseURL is the Postgres connection string; its search_path (if
	// any) picks the schema.
	DatabaseURL string
	// Action is up (apply pending migrations and changed functions) or
	// status (list them).
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
// migrations and functions, or shows which are applied.
type MigrateCommand struct{}

// Name implements Command.
func (MigrateCommand) Name() string { return "migrate" }

// Summary implements Command.
func (MigrateCommand) Summary() string { return "apply the Postgres schema (up) or show its status" }

// Run implements Command.
func (c MigrateCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[-database-url URL] up|status",
		"Migrate applies the Postgres migrations Trellis embeds (up), each in its own\ntransaction under an advisory lock, then the function files that changed\n(schema/functions, in one transaction); or lists both with when each was\napplied (status). The connection string's search_path picks the schema.")
	opts := MigrateOptions{}
	addDatabaseURLFlag(fs, &opts.DatabaseURL, os.Getenv("TRELLIS_DATABASE_URL"), "Postgres connection `string` (default $TRELLIS_DATABASE_URL)")
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
		return migrateUp(ctx, pool, stdout, stderr)
	}
	states, err := pgstore.MigrationStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	functions, err := pgstore.FunctionStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	var lines [][2]string // what, when
	pending := 0
	for _, s := range states {
		when := "pending"
		if s.AppliedAt != nil {
			when = "applied " + s.AppliedAt.UTC().Format(migrateTime)
		} else {
			pending++
		}
		lines = append(lines, [2]string{fmt.Sprintf("%04d_%s", s.Version, s.Name), when})
	}
	newer := functions.Version > schema.FunctionsVersion
	for _, f := range functions.Files {
		when := "pending"
		switch {
		case f.AppliedAt == nil && newer:
			when = "not applied (the database has a newer binary's functions)"
		case f.AppliedAt == nil:
			pending++
		case f.Current || newer:
			when = "applied " + f.AppliedAt.UTC().Format(migrateTime)
		default:
			when = "changed since applied " + f.AppliedAt.UTC().Format(migrateTime)
			pending++
		}
		lines = append(lines, [2]string{"functions/" + f.Name, when})
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	for _, l := range lines {
		fmt.Fprintf(stdout, "%-*s  %s\n", width, l[0], l[1])
	}
	switch {
	case newer:
		fmt.Fprintf(stdout, "the functions are version %d, newer than this binary's %d: migrate up leaves them as they are\n",
			functions.Version, schema.FunctionsVersion)
	case pending == 0 && !functions.Current():
		// Every file as applied, by a binary of an older FunctionsVersion.
		fmt.Fprintf(stdout, "the functions are version %d, older than this binary's %d: run trellis migrate up\n",
			functions.Version, schema.FunctionsVersion)
	}
	if pending > 0 {
		fmt.Fprintf(stdout, "%d pending: run trellis migrate up\n", pending)
	}
	return ExitOK
}

// migrateTime is how migrate prints when something was applied.
const migrateTime = "2006-01-02 15:04:05Z"

// migrateUp applies what is pending and says what it applied: the
// migrations, as Migrate returns them, and the function files whose
// time of application changed.
func migrateUp(ctx context.Context, pool *pgxpool.Pool, stdout, stderr io.Writer) int {
	before, err := pgstore.FunctionStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	applied, err := pgstore.Migrate(ctx, pool)
	for _, m := range applied {
		fmt.Fprintf(stdout, "applied %04d_%s\n", m.Version, m.Name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	after, err := pgstore.FunctionStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "trellis migrate: %v\n", err)
		return ExitProblems
	}
	functions := 0
	for i, f := range after.Files {
		if was := before.Files[i].AppliedAt; f.AppliedAt != nil && (was == nil || !was.Equal(*f.AppliedAt)) {
			fmt.Fprintf(stdout, "applied functions/%s\n", f.Name)
			functions++
		}
	}
	if after.Version > schema.FunctionsVersion {
		fmt.Fprintf(stdout, "left the functions as they are: version %d, newer than this binary's %d\n", after.Version, schema.FunctionsVersion)
	}
	if len(applied) == 0 && functions == 0 {
		fmt.Fprintln(stdout, "schema is up to date")
	}
	return ExitOK
}
