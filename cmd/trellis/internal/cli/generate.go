package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/effectivelabs/trellis/gen"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// GenerateOptions are the options of trellis generate.
type GenerateOptions struct {
	// Package is the Go package of the generated files; empty means the
	// package of the other Go files in each directory, or else the
	// directory's name.
	Package string
	// Graph, when set, is a graph format (mermaid or dot): generate also
	// writes the workflow's graph beside its code, as <name>.mmd or
	// <name>.dot. Empty means no graph.
	Graph string
	// Paths are workflow files and directories to search; none means the
	// current directory.
	Paths []string
}

// Validate reports options generate cannot run with.
func (o GenerateOptions) Validate() error {
	if o.Graph != "" {
		if _, err := graph.ParseFormat(o.Graph); err != nil {
			return err
		}
	}
	if o.Package != "" {
		return gen.CheckPackageName(o.Package)
	}
	return nil
}

// GenerateCommand is trellis generate: it writes <name>.gen.go beside each
// workflow file <name>.yaml. It runs every lint check first and writes
// nothing at all if any file has a problem.
type GenerateCommand struct{}

// Name implements Command.
func (GenerateCommand) Name() string { return "generate" }

// Summary implements Command.
func (GenerateCommand) Summary() string { return "generate Go code from workflow files" }

// Run implements Command.
func (c GenerateCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[-package name] [-graph mermaid|dot] [files or directories]",
		"Generate writes <name>.gen.go beside each workflow file <name>.yaml, and with\n-graph its graph too (<name>.mmd or <name>.dot, as trellis graph draws it).\nIt runs the checks of trellis lint first and writes nothing if any file has a\nproblem. Use it from go generate, as a tool of your module\n(go mod edit -tool github.com/effectivelabs/trellis/cmd/trellis):\n\n\t//go:generate go tool trellis generate orders.yaml")
	opts := GenerateOptions{}
	fs.StringVar(&opts.Package, "package", "", "Go package `name` of the generated files (default: the package of the directory's Go files, else the directory name)")
	fs.StringVar(&opts.Graph, "graph", "", "also write each workflow's graph in `format` mermaid (<name>.mmd) or dot (<name>.dot) beside its code")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	opts.Paths = fs.Args()
	return Generate(ctx, opts, stdout, stderr)
}

// Generate runs trellis generate with opts and returns its exit code.
// Problems and errors go to stderr; on success it prints nothing.
func Generate(ctx context.Context, opts GenerateOptions, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "trellis generate: %v\n", err)
		return code
	}
	if err := opts.Validate(); err != nil {
		return fail(ExitUsage, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(ExitProblems, err)
	}
	paths, err := gen.Find(opts.Paths)
	if err != nil {
		if errors.Is(err, gen.ErrNoSuchPath) {
			return fail(ExitUsage, err)
		}
		return fail(ExitProblems, err)
	}
	g, err := gen.New()
	if err != nil {
		return fail(ExitProblems, err)
	}
	outputs, problems, err := g.Generate(paths, opts.Package)
	if err != nil {
		return fail(ExitProblems, err)
	}
	if len(problems) > 0 {
		if err := writeText(stderr, problems); err != nil {
			return fail(ExitProblems, err)
		}
		fmt.Fprintf(stderr, "trellis generate: %d problem(s); no file was written\n", len(problems))
		return ExitProblems
	}
	format, _ := graph.ParseFormat(opts.Graph) // valid or empty, see Validate
	for _, out := range outputs {
		if err := writeIfChanged(out.Path, out.Content); err != nil {
			return fail(ExitProblems, err)
		}
		if opts.Graph == "" {
			continue
		}
		drawing, err := graph.Render(out.Spec, format, graph.Options{})
		if err != nil {
			return fail(ExitProblems, err)
		}
		if err := writeIfChanged(gen.GraphPath(out.Source, format), drawing); err != nil {
			return fail(ExitProblems, err)
		}
	}
	return ExitOK
}

// writeIfChanged writes content to path unless the file already holds
// exactly that, so that regenerating leaves unchanged files (and their
// modification times, which build tools watch) alone. It writes over
// regular files only: not through a symlink, which could lead anywhere.
func writeIfChanged(path string, content []byte) error {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("writing output: %w", err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("writing output: %s is not a regular file (a symlink, a directory or a device); remove it and generate again", path)
	case info.Size() == int64(len(content)):
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			return nil
		}
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}
