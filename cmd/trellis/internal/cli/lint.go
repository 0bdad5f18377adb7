package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/effectivelabs/trellis/gen"
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
}

// Validate reports options lint cannot run with.
func (o LintOptions) Validate() error {
	if _, ok := formatter(o.Format); !ok {
		return fmt.Errorf("unknown format %q: use text, json or github", o.Format)
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
	fs := newFlagSet(c.Name(), "[-format text|json|github] [-q] [files or directories]",
		"Lint checks workflow files (and, in directories, recursively every *.yaml or\n*.yml file with a top-level steps key) and prints each problem as\nfile:line:col: message; when there is none, it says how much it checked\n(ok: 3 workflows, 17 steps checked), unless -q.")
	opts := LintOptions{}
	fs.StringVar(&opts.Format, "format", "text", "output `format`: text (file:line:col: message), json, or github (GitHub Actions annotations)")
	fs.BoolVar(&opts.Quiet, "q", false, "print nothing when there is no problem (problems are still printed)")
	fs.BoolVar(&opts.Quiet, "quiet", false, "the same as -q")
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
	write, _ := formatter(opts.Format)
	if err := write(stdout, problems); err != nil {
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
		_ = writeStyled(stdout, segment{"ok", good}, segment{fmt.Sprintf(": %s, %s checked\n", plural(len(files), "workflow"), plural(steps, "step")), plain})
	}
	return ExitOK
}
