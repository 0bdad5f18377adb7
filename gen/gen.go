// Package gen is the front end of Trellis: it finds workflow files, lints
// them, and generates their Go code. It ties together package workflow
// (parsing and checking the YAML format) and package golang (mapping to
// Go and rendering), and adds the checks that span files: workflows that
// share a Go package must not share a name or a generated identifier.
//
// The trellis command's lint and generate subcommands are thin wrappers
// around Generator.
package gen

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/effectivelabs/trellis/gen/internal/golang"
	"github.com/effectivelabs/trellis/gen/internal/workflow"
	"github.com/effectivelabs/trellis/schema/spec"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// Problem is one thing wrong with a workflow file; its String is
// file:line:col: message.
type Problem = workflow.Problem

// Generator lints workflow files and generates their code. Create one with
// New and reuse it; it is safe for concurrent use.
type Generator struct {
	parser *workflow.Parser
}

// New returns a Generator.
func New() (*Generator, error) {
	p, err := workflow.NewParser()
	if err != nil {
		return nil, fmt.Errorf("preparing the workflow parser: %w", err)
	}
	return &Generator{parser: p}, nil
}

// File is a checked workflow file.
type File struct {
	// Path is where the file was read from.
	Path string
	// Problems are everything wrong with the file on its own, sorted.
	Problems []Problem
	workflow *workflow.Workflow
	plan     *golang.Plan
}

// Spec is the workflow spec the generated code embeds, or nil when the
// file has problems.
func (f *File) Spec() *spec.Workflow {
	if len(f.Problems) > 0 || f.plan == nil {
		return nil
	}
	return f.plan.Spec()
}

// Check lints one file's content: the YAML format, the graph, conditions,
// schemas, and the Go names the code would use.
func (g *Generator) Check(path string, src []byte) *File {
	return g.check(newResolver(g), path, src)
}

// check checks one file through r, which finds its child workflows (and
// parses each file once across calls with the same r).
func (g *Generator) check(r *resolver, path string, src []byte) *File {
	f := &File{Path: path}
	p := r.parse(path, src)
	if p.err != nil {
		f.Problems = []Problem{{File: path, Line: 1, Column: 1, Message: p.err.Error()}}
		return f
	}
	w, problems := p.w, p.problems
	f.workflow = w
	if w != nil {
		plan, more := golang.Check(w)
		f.plan = plan
		problems = append(problems, more...)
	}
	f.Problems = workflow.Sorted(problems)
	return f
}

// Lint checks the files at paths (as returned by Find), including the
// checks across files of one package. It returns every problem, sorted by
// file and position; the error is for files that cannot be read.
func (g *Generator) Lint(paths []string) ([]Problem, error) {
	_, problems, err := g.LintFiles(paths)
	return problems, err
}

// LintFiles is Lint that also returns each file it checked, in the order
// of paths, for a report of what was checked (each clean file's Spec).
func (g *Generator) LintFiles(paths []string) ([]*File, []Problem, error) {
	files, err := g.checkAll(paths)
	if err != nil {
		return nil, nil, err
	}
	var all []Problem
	for _, f := range files {
		all = append(all, f.Problems...)
	}
	return files, workflow.Sorted(all), nil
}

func (g *Generator) checkAll(paths []string) ([]*File, error) {
	files := make([]*File, 0, len(paths))
	r := newResolver(g)
	for _, path := range paths {
		src, err := ReadFile(path)
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNotRegular) {
			files = append(files, &File{Path: path, Problems: []Problem{{File: path, Line: 1, Column: 1, Message: "the file is " + err.Error()}}})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading workflow: %w", err)
		}
		files = append(files, g.check(r, path, src))
	}
	checkPackages(files)
	checkStartEvents(files)
	return files, nil
}

// checkStartEvents adds the problems between workflows that start on an
// event of one name with different payload schemas: an event is
// addressed by name, so one publish reaches both, and one of them would
// refuse what the other accepts.
func checkStartEvents(files []*File) {
	type first struct {
		file   *File
		schema string
	}
	seen := map[string]first{}
	for _, f := range files {
		w := f.workflow
		if w == nil {
			continue
		}
		probs := workflow.NewProblems(f.Path)
		done := map[string]bool{}
		for _, st := range w.StartOn {
			ev, ok := w.Event(st.Event)
			if !ok || ev.Schema == nil || !ev.Schema.OK || done[st.Event] {
				continue
			}
			done[st.Event] = true
			prev, ok := seen[st.Event]
			if !ok {
				seen[st.Event] = first{f, ev.Schema.JSON}
				continue
			}
			if prev.schema != ev.Schema.JSON {
				probs.Add(ev.Pos, "", "workflow %s (%s) also starts on event %s, with another payload schema: a published %s reaches both, and each checks it against its own schema; declare the same schema in both", prev.file.workflow.Name, filepath.Base(prev.file.Path), st.Event, st.Event)
			}
		}
		f.Problems = workflow.Sorted(append(f.Problems, probs.List()...))
	}
}

// checkPackages adds the problems between files that generate into the
// same directory, and so the same Go package: two workflows with one
// name, two files with one output file, or one generated identifier
// declared twice.
func checkPackages(files []*File) {
	byDir := map[string][]*File{}
	var dirs []string
	for _, f := range files {
		dir := filepath.Dir(f.Path)
		if _, ok := byDir[dir]; !ok {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], f)
	}
	for _, dir := range dirs {
		outputs := map[string]*File{}
		names := map[string]*File{}
		idents := map[string]*File{}
		for _, f := range byDir[dir] {
			probs := workflow.NewProblems(f.Path)
			out := OutputPath(f.Path)
			if other, dup := outputs[out]; dup {
				probs.Add(workflow.Pos{Line: 1, Column: 1}, "", "this file and %s would both generate %s; rename one of them", filepath.Base(other.Path), filepath.Base(out))
			}
			outputs[out] = f
			if f.plan == nil || f.plan.GoName() == "" {
				f.Problems = workflow.Sorted(append(f.Problems, probs.List()...))
				continue
			}
			// Workflows with one Go name would collide on every identifier:
			// say so once.
			if other, dup := names[f.plan.GoName()]; dup {
				if other.workflow.Name == f.workflow.Name {
					probs.Add(f.workflow.NamePos, "", "workflow name %q is also used by %s; workflows in one Go package need different names", f.workflow.Name, filepath.Base(other.Path))
				} else {
					probs.Add(f.workflow.NamePos, "", "workflow names %q and %q (in %s) both become Go name %s; workflows in one Go package need different names", f.workflow.Name, other.workflow.Name, filepath.Base(other.Path), f.plan.GoName())
				}
				f.Problems = workflow.Sorted(append(f.Problems, probs.List()...))
				continue
			}
			names[f.plan.GoName()] = f
			for _, id := range f.plan.Identifiers() {
				if other, dup := idents[id.Name]; dup && other != f {
					probs.Add(id.Pos, "", "the Go name %s for %s is also declared by %s, in the same package; rename one of them", id.Name, id.What, filepath.Base(other.Path))
					continue
				}
				idents[id.Name] = f
			}
			f.Problems = workflow.Sorted(append(f.Problems, probs.List()...))
		}
	}
}

// GraphPath is where the graph of a workflow file in format f goes: beside
// it and its generated code, named after it (orders.yaml -> orders.mmd,
// orders.dot).
func GraphPath(path string, f graph.Format) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + f.Ext()
}

// OutputPath is where the code generated from a workflow file goes: beside
// it, named after it (orders.yaml -> orders.gen.go).
func OutputPath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".gen.go"
}

// Pos is a position in a workflow file (line and column from 1).
type Pos = workflow.Pos

// NamePos is where the file writes its workflow's name (1:1 when the
// file could not be parsed).
func (f *File) NamePos() Pos {
	if f.workflow == nil || f.workflow.NamePos.Line < 1 {
		return Pos{Line: 1, Column: 1}
	}
	return f.workflow.NamePos
}

// StepPos is where the file writes the step named name, or, with output
// true, that step's output schema (the step's name when it has none
// written); NamePos when there is no such step.
func (f *File) StepPos(name string, output bool) Pos {
	if f.workflow == nil {
		return f.NamePos()
	}
	for _, s := range f.workflow.Steps {
		if s.Name != name {
			continue
		}
		if output && s.Output != nil && s.Output.Value != nil && s.Output.Value.Pos.Line > 0 {
			return s.Output.Value.Pos
		}
		if s.Pos.Line > 0 {
			return s.Pos
		}
	}
	return f.NamePos()
}

// EventPos is where the file declares the event named name; NamePos
// when it does not.
func (f *File) EventPos(name string) Pos {
	if f.workflow != nil {
		if ev, ok := f.workflow.Event(name); ok && ev.Pos.Line > 0 {
			return ev.Pos
		}
	}
	return f.NamePos()
}

// InputPos is where the file writes its input schema; NamePos when it
// has none.
func (f *File) InputPos() Pos {
	if f.workflow != nil && f.workflow.Input != nil && f.workflow.Input.Value != nil && f.workflow.Input.Value.Pos.Line > 0 {
		return f.workflow.Input.Value.Pos
	}
	return f.NamePos()
}
