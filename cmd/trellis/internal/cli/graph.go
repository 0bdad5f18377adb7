package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/effectivelabs/trellis/gen"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// GraphOptions are the options of trellis graph.
type GraphOptions struct {
	// Format is mermaid or dot.
	Format string
	// Output is the file to write; empty means stdout.
	Output string
	// Path is the workflow file to draw.
	Path string
}

// Validate reports options graph cannot run with.
func (o GraphOptions) Validate() error {
	if _, err := graph.ParseFormat(o.Format); err != nil {
		return err
	}
	if o.Path == "" {
		return errors.New("no workflow file: pass one, as in trellis graph orders.yaml")
	}
	return nil
}

// GraphCommand is trellis graph: it draws a workflow's DAG as a Mermaid
// flowchart or a Graphviz digraph. It runs the checks of trellis lint
// first and draws nothing for a file with problems.
type GraphCommand struct{}

// Name implements Command.
func (GraphCommand) Name() string { return "graph" }

// Summary implements Command.
func (GraphCommand) Summary() string { return "draw a workflow's steps as a Mermaid or DOT graph" }

// Run implements Command.
func (c GraphCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[-format mermaid|dot] [-o file] FILE.yaml",
		"Graph draws the steps of a workflow file and their parents, with sleeps, skipIf\n"+
			"conditions, retries, timeouts and the failure handler, as a Mermaid flowchart\n"+
			"(paste it into a ```mermaid block of a Markdown file or pull request) or a\n"+
			"Graphviz digraph (dot -Tsvg). It runs the checks of trellis lint first and\n"+
			"prints the problems instead when the file has any.")
	opts := GraphOptions{}
	fs.StringVar(&opts.Format, "format", string(graph.Mermaid), "output `format`: mermaid or dot")
	fs.StringVar(&opts.Output, "o", "", "write the graph to `file` instead of stdout")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "trellis graph: %d files given; it draws one workflow file\n", fs.NArg())
		return ExitUsage
	}
	opts.Path = fs.Arg(0)
	return Graph(ctx, opts, stdout, stderr)
}

// Graph runs trellis graph with opts and returns its exit code. The graph
// goes to opts.Output, or stdout; problems and errors go to stderr.
func Graph(ctx context.Context, opts GraphOptions, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "trellis graph: %v\n", err)
		return code
	}
	if err := opts.Validate(); err != nil {
		return fail(ExitUsage, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(ExitProblems, err)
	}
	format, _ := graph.ParseFormat(opts.Format)
	info, err := os.Stat(opts.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(ExitUsage, fmt.Errorf("%s: %w", opts.Path, gen.ErrNoSuchPath))
	case err != nil:
		return fail(ExitProblems, err)
	case info.IsDir():
		return fail(ExitUsage, fmt.Errorf("%s is a directory; pass one workflow file", opts.Path))
	}
	src, err := gen.ReadFile(opts.Path)
	if err != nil {
		return fail(ExitProblems, fmt.Errorf("reading workflow %s: %w", opts.Path, err))
	}
	g, err := gen.New()
	if err != nil {
		return fail(ExitProblems, err)
	}
	f := g.Check(opts.Path, src)
	if len(f.Problems) > 0 {
		if err := writeText(stderr, f.Problems); err != nil {
			return fail(ExitProblems, err)
		}
		fmt.Fprintf(stderr, "trellis graph: %d problem(s); no graph was drawn\n", len(f.Problems))
		return ExitProblems
	}
	out, err := graph.Render(f.Spec(), format, graph.Options{})
	if err != nil {
		return fail(ExitProblems, err)
	}
	if opts.Output == "" {
		if _, err := stdout.Write(out); err != nil {
			return fail(ExitProblems, err)
		}
		return ExitOK
	}
	if err := writeIfChanged(opts.Output, out); err != nil {
		return fail(ExitProblems, err)
	}
	return ExitOK
}
