// Package cli implements the trellis command. Each subcommand is a type
// with validated options and a Run method that writes to the writers it
// is given and returns the exit code, so commands are tested without
// starting a process; cmd/trellis only wires it to the real process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
)

// Exit codes shared by all commands.
const (
	// ExitOK means the command did what was asked and found nothing wrong.
	ExitOK = 0
	// ExitProblems means the command ran and found problems (or failed).
	ExitProblems = 1
	// ExitUsage means the command line was wrong: an unknown command or
	// flag, a bad flag value, or a path that does not exist.
	ExitUsage = 2
)

// Command is one trellis subcommand.
type Command interface {
	// Name is what the user types: trellis <name>.
	Name() string
	// Summary is the one-line description the usage text shows.
	Summary() string
	// Run executes the command with its arguments (without the name) and
	// returns the exit code. Normal output goes to stdout, diagnostics to
	// stderr.
	Run(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Commands returns every subcommand, in the order the usage text lists
// them. A new command is a type implementing Command, added here.
func Commands() []Command {
	return []Command{
		LintCommand{},
		GenerateCommand{},
		GraphCommand{},
		MigrateCommand{},
		RunsCommand{},
		WorkersCommand{},
		QueueCommand{},
		WorkflowsCommand{},
		SchedulesCommand{},
		EventsCommand{},
		DashboardCommand{},
		BenchCommand{},
	}
}

// Main runs the command line args (without the program name) and returns
// the exit code. All it prints passes through package termtext: text from
// users and steps (errors, tenants, keys, outputs, names) cannot move the
// cursor, recolour the terminal, write its clipboard or reorder a line;
// such characters are shown escaped.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out, errOut := termtext.NewWriter(stdout), termtext.NewWriter(stderr)
	defer errOut.Flush()
	defer out.Flush()
	return dispatch(ctx, args, out, errOut)
}

// dispatch runs the command args name.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return ExitOK
	}
	for _, c := range Commands() {
		if c.Name() == args[0] {
			return c.Run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "trellis: unknown command %q\n\n", args[0])
	usage(stderr)
	return ExitUsage
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("trellis lints Trellis workflow files, generates their Go code, draws their\ngraphs, manages the Postgres schema, shows and steers runs, and benchmarks\nthe engine.\n\n")
	b.WriteString("Usage:\n\n\ttrellis <command> [flags] [arguments]\n\nCommands:\n\n")
	for _, c := range Commands() {
		fmt.Fprintf(&b, "\t%-10s %s\n", c.Name(), c.Summary())
	}
	b.WriteString("\nRun trellis <command> -h for the flags of a command.\n")
	fmt.Fprint(w, b.String())
}

// parseFlags parses args with fs, reporting errors and -h on stderr. It
// returns the exit code to stop with, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	return -1
}

// newFlagSet returns a flag set whose usage text shows the command's
// synopsis and summary before its flags.
func newFlagSet(name, synopsis, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet("trellis "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: trellis %s %s\n\n%s\n\nFlags:\n", name, synopsis, summary)
		fs.PrintDefaults()
	}
	return fs
}
