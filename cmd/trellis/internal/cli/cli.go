// Package cli implements the trellis command. Each subcommand is a type
// with validated options and a Run method that writes to the writers it
// is given and returns the exit code, so commands are tested without
// starting a process; cmd/trellis only wires it to the real process.
package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/effectivelabs/trellis/internal/suggest"
)

// Exit codes shared by all commands; docs/reference/cli/README.md lists
// them for users.
const (
	// ExitOK means the command did what was asked and found nothing wrong.
	ExitOK = 0
	// ExitProblems means the command ran and found problems (lint), or
	// could not do what was asked: a run not found, the database failed.
	ExitProblems = 1
	// ExitUsage means the command line was wrong: an unknown command or
	// flag, a bad flag value, or a path that does not exist.
	ExitUsage = 2
	// ExitNotConfirmed means the command changed nothing because the
	// change was not confirmed: it was answered no, or, without a
	// terminal to ask on, -yes was not given.
	ExitNotConfirmed = 3
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
		VersionCommand{},
	}
}

// Main runs the command line args (without the program name) and returns
// the exit code. All it prints passes through package termtext: text from
// users and steps (errors, tenants, keys, outputs, names) cannot move the
// cursor, recolour the terminal, write its clipboard or reorder a line;
// such characters are shown escaped. On a terminal, statuses, problems
// and headings are in colour, which the CLI adds around escaped text (see
// writeStyled): -color, which every command takes, says auto (the
// default: on a terminal unless NO_COLOR is set or TERM=dumb), always or
// never.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	mode := colourAuto
	out, errOut := newOutput(stdout, &mode), newOutput(stderr, &mode)
	defer errOut.Flush()
	defer out.Flush()
	return dispatch(ctx, args, out, errOut)
}

// dispatch runs the command args name, which flags may precede (trellis
// -color never runs list): they are the command's.
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
	var names []string
	for _, c := range Commands() {
		names = append(names, c.Name())
	}
	name, rest := splitSubcommand(args, names)
	for _, c := range Commands() {
		if c.Name() == name {
			return c.Run(ctx, rest, stdout, stderr)
		}
	}
	if name == "" {
		fmt.Fprint(stderr, "trellis: no command: give one of those below\n\n")
		usage(stderr)
		return ExitUsage
	}
	hint := ""
	if guess := suggest.Closest(name, names); guess != "" {
		hint = fmt.Sprintf("; did you mean %q?", guess)
	}
	fmt.Fprintf(stderr, "trellis: unknown command %q%s\n\n", name, hint)
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
	b.WriteString("\nRun trellis <command> -h for the flags of a command. Flags may come before or\nafter the command and its arguments; every command takes -color auto|always|never.\n")
	fmt.Fprint(w, b.String())
}

// parseFlags parses args with fs. Flags may come before, between and
// after the positional arguments (trellis runs show ID -format json), as
// -flag value or -flag=value, up to a "--" after which every argument is
// positional; a boolean flag takes no value unless given as -flag=false.
// Afterwards fs.Args() holds the positional arguments, in their order.
// Errors and -h go to stderr; an unknown flag gets a "did you mean". It
// returns the exit code to stop with, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	var help bytes.Buffer
	fs.SetOutput(&help) // the flag package's own report is replaced below
	defer fs.SetOutput(stderr)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				_, _ = help.WriteTo(stderr)
				return ExitOK
			}
			flagError(fs, err, stderr)
			return ExitUsage
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" && !takesValue(fs, args[:consumed-1]) {
			positional = append(positional, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parsing "--" first leaves every argument positional: fs.Args().
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		panic(err) // cannot happen: no flag is parsed
	}
	// -color, which every command takes, applies to both streams.
	fs.Visit(func(f *flag.Flag) {
		if o, ok := stderr.(*output); ok && f.Name == "color" {
			*o.mode = f.Value.String()
		}
	})
	return -1
}

// takesValue reports whether the last of args is a flag that takes the
// argument after it as its value (-tenant, not -yes or -tenant=x).
func takesValue(fs *flag.FlagSet, args []string) bool {
	if len(args) == 0 || !strings.HasPrefix(args[len(args)-1], "-") {
		return false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(args[len(args)-1], "-"), "-")
	f := fs.Lookup(name) // nil for -x=v
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// flagError reports a flag the command line got wrong, with a guess at
// the flag meant when it is unknown.
func flagError(fs *flag.FlagSet, err error, stderr io.Writer) {
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	} else {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		hint := ""
		if guess := suggest.Closest(strings.TrimPrefix(name, "-"), names); guess != "" {
			hint = fmt.Sprintf("; did you mean -%s?", guess)
		}
		fmt.Fprintf(stderr, "%s: unknown flag -%s%s\n", fs.Name(), name, hint)
	}
	fmt.Fprintf(stderr, "Run %s -h for its flags.\n", fs.Name())
}

// splitSubcommand finds the subcommand among args, which flags may
// precede (trellis runs -format json list): the first argument that is
// neither a flag nor the value of the flag before it, or an argument that
// names a subcommand. It returns it ("" when there is none) and the
// arguments without it.
func splitSubcommand(args, names []string) (string, []string) {
	for i, a := range args {
		switch {
		case a == "--":
			return "", args
		case slices.Contains(names, a):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			continue
		case i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "="):
			continue // the value of the flag before it
		}
		return a, append(slices.Clip(args[:i]), args[i+1:]...)
	}
	return "", args
}

// wantsHelp reports whether args ask for help (-h) before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// unknownSubcommand reports a subcommand cmd does not have, with a guess
// at the one meant.
func unknownSubcommand(stderr io.Writer, cmd, sub string, names []string) {
	hint := ""
	if guess := suggest.Closest(sub, names); guess != "" {
		hint = fmt.Sprintf("; did you mean %q?", guess)
	}
	fmt.Fprintf(stderr, "trellis %s: unknown subcommand %q%s\n\n", cmd, sub, hint)
}

// newFlagSet returns a flag set whose usage text shows the command's
// synopsis and summary before its flags, with the flag every command
// takes: -color.
func newFlagSet(name, synopsis, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet("trellis "+name, flag.ContinueOnError)
	mode := colourAuto
	fs.Var(colourFlag{&mode}, "color", "`when` to colour statuses, problems and headings: auto (on a terminal, unless\n$NO_COLOR is set or TERM=dumb), always or never")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: trellis %s %s\n\n%s\n\nFlags:\n", name, synopsis, summary)
		fs.PrintDefaults()
	}
	return fs
}
