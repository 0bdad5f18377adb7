package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
	"github.com/effectivelabs/trellis/gen"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// LintOptions are the options of trellis lint.
type LintOptions struct {
	// Format is how problems are printed: text, json or github.
	Format string
	// Paths are workflow files and directories to search; none means the
	// current directory.
	Paths []string
	// Quiet prints nothing when there is no problem: no "ok" line.
	Quiet bool
	// Against, when set, is a Postgres connection string ("env" for
	// $TRELLIS_DATABASE_URL): the files are also checked against the
	// workflow versions with runs in progress there.
	Against string
	// AgainstLimit bounds the versions with runs in progress read
	// (store.DefaultInFlightLimit when not positive).
	AgainstLimit int
	// Accept are the changes to accept, each kind[:workflow[.step]]:
	// printed as notes, they do not fail lint.
	Accept []string
}

// Validate reports options lint cannot run with.
func (o LintOptions) Validate() error {
	if _, ok := formatter(o.Format); !ok {
		return fmt.Errorf("unknown format %q: use text, json or github", o.Format)
	}
	if len(o.Accept) > 0 && o.Against == "" {
		return errors.New("-accept accepts changes found by -against: give -against too")
	}
	if o.AgainstLimit < 0 {
		return fmt.Errorf("-against-limit %d: give a positive number of versions", o.AgainstLimit)
	}
	for _, a := range o.Accept {
		if _, err := parseAccept(a); err != nil {
			return err
		}
	}
	return nil
}

// LintCommand is trellis lint: it checks workflow files and prints every
// problem it finds, or in text a line saying all is well. It exits 0
// when there are none, 1 when there are, and 2 on a usage error.
type LintCommand struct{}

// Name implements Command.
func (LintCommand) Name() string { return "lint" }

// Summary implements Command.
func (LintCommand) Summary() string { return "check workflow files and report every problem" }

// Run implements Command.
func (c LintCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[-format text|json|github] [-q] [-against URL [-accept kind[:workflow[.step]]]...] [files or directories]",
		"Lint checks workflow files (and, in directories, recursively every *.yaml or\n*.yml file with a top-level steps key) and prints each problem as\nfile:line:col: message; when there is none, it says how much it checked\n(ok: 3 workflows, 17 steps checked), unless -q.\n\nWith -against, it also compares each workflow with its versions that have\nruns in progress in that database, and reports each change those runs\nwould notice once the files are deployed (a step removed or renamed that\nthey have still to run, an output a step still to run reads, an event they\nwait for, an input a schedule does not supply, a child workflow's contract).\n-accept lets a change through deliberately: it is printed as a note.")
	opts := LintOptions{}
	fs.StringVar(&opts.Format, "format", "text", "output `format`: text (file:line:col: message), json, or github (GitHub Actions annotations)")
	fs.BoolVar(&opts.Quiet, "q", false, "print nothing when there is no problem (problems are still printed)")
	fs.BoolVar(&opts.Quiet, "quiet", false, "the same as -q")
	fs.Var(databaseURL{&opts.Against}, "against", "check the files against the runs in progress in this Postgres database (a connection `string`, or env for $TRELLIS_DATABASE_URL); read only")
	fs.IntVar(&opts.AgainstLimit, "against-limit", 0, fmt.Sprintf("read at most this many workflow versions with runs in progress (`n`; default %d)", store.DefaultInFlightLimit))
	fs.Var(acceptList{&opts.Accept}, "accept", "accept changes of this `kind[:workflow[.step]]` found by -against: they are printed as notes and do not fail lint (repeatable; kinds: "+changeKindNames()+")")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	opts.Paths = fs.Args()
	return Lint(ctx, opts, stdout, stderr)
}

// Lint runs trellis lint with opts and returns its exit code. Problems go
// to stdout in the chosen format; usage errors to stderr.
func Lint(ctx context.Context, opts LintOptions, stdout, stderr io.Writer) int {
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "trellis lint: %v\n", err)
		return ExitUsage
	}
	if err := ctx.Err(); err != nil {
		fmt.Fprintf(stderr, "trellis lint: %v\n", err)
		return ExitProblems
	}
	paths, err := gen.Find(opts.Paths)
	if err != nil {
		fmt.Fprintf(stderr, "trellis lint: %v\n", err)
		if errors.Is(err, gen.ErrNoSuchPath) {
			return ExitUsage
		}
		return ExitProblems
	}
	g, err := gen.New()
	if err != nil {
		fmt.Fprintf(stderr, "trellis lint: %v\n", err)
		return ExitProblems
	}
	files, problems, err := g.LintFiles(paths)
	if err != nil {
		fmt.Fprintf(stderr, "trellis lint: %v\n", err)
		return ExitProblems
	}
	var against againstResult
	if opts.Against != "" && len(problems) == 0 {
		var warnings strings.Builder
		against, err = checkAgainst(ctx, opts, files, &warnings)
		fmt.Fprint(stderr, warnings.String())
		if err != nil {
			fmt.Fprintf(stderr, "trellis lint: -against: %s\n", termtext.Text(strings.TrimPrefix(err.Error(), errAgainstUsage.Error()+": ")))
			if errors.Is(err, errAgainstUsage) {
				return ExitUsage
			}
			return ExitProblems
		}
		problems = against.problems
	}
	write := notesWriter(opts.Format)
	if err := write(stdout, problems, against.notes); err != nil {
		fmt.Fprintf(stderr, "trellis lint: writing the report: %v\n", err)
		return ExitProblems
	}
	if len(problems) > 0 {
		return ExitProblems
	}
	if opts.Format == "text" && !opts.Quiet {
		steps := 0
		for _, f := range files {
			steps += len(f.Spec().Steps)
		}
		checked := ""
		if opts.Against != "" {
			checked = fmt.Sprintf(" against %s in progress", plural(against.runs, "run"))
		}
		_ = writeStyled(stdout, segment{"ok", good}, segment{fmt.Sprintf(": %s, %s checked%s\n", plural(len(files), "workflow"), plural(steps, "step"), checked), plain})
	}
	return ExitOK
}

// changeKindNames lists the kinds of change, for help.
func changeKindNames() string {
	var names []string
	for _, k := range spec.ChangeKinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}
