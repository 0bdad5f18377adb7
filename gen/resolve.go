package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/effectivelabs/trellis/gen/internal/workflow"
)

// resolver finds child workflows for one lint or generate: by name among
// the workflow files of the parent's directory, or in the file a step
// names. Every file is parsed once, whether it was asked for or reached
// as a child, so that a file's problems are found once.
type resolver struct {
	g      *Generator
	parsed map[string]*parsed // by cleaned path
	// stack lists the files being parsed, parents first, to tell a cycle
	// of child workflows.
	stack []string
	// names caches the workflow name of each file of a directory.
	names map[string]map[string]string // dir -> path -> name
	// modules caches the module of the workflow files of a directory.
	modules map[string]*module
}

type parsed struct {
	path     string // as first given
	w        *workflow.Workflow
	problems []Problem
	err      error // reading the file failed
}

func newResolver(g *Generator) *resolver {
	return &resolver{g: g, parsed: map[string]*parsed{}, names: map[string]map[string]string{}, modules: map[string]*module{}}
}

// parse parses the file at path (src, when not nil, is its content),
// resolving its child workflows through r.
func (r *resolver) parse(path string, src []byte) *parsed {
	key := filepath.Clean(path)
	if p, ok := r.parsed[key]; ok {
		return p
	}
	p := &parsed{path: path}
	r.parsed[key] = p
	if src == nil {
		if src, p.err = ReadFile(path); p.err != nil {
			return p
		}
	}
	r.stack = append(r.stack, key)
	p.w, p.problems = r.g.parser.ParseWith(path, src, r)
	r.stack = r.stack[:len(r.stack)-1]
	return p
}

// Resolve implements workflow.Resolver.
func (r *resolver) Resolve(from, name, file string) (*workflow.Workflow, error) {
	dir := filepath.Dir(from)
	var path string
	if file != "" {
		var err error
		if path, err = childPath(dir, file); err != nil {
			return nil, fmt.Errorf("workflow %s: file %s is %w", name, file, err)
		}
	} else {
		names, err := r.dirNames(dir)
		if err != nil {
			return nil, err
		}
		var candidates []string
		for p, n := range names {
			if n == name {
				candidates = append(candidates, p)
			}
		}
		sort.Strings(candidates)
		switch len(candidates) {
		case 0:
			all := make([]string, 0, len(names))
			for _, n := range names {
				all = append(all, n)
			}
			return nil, fmt.Errorf("no workflow file in %s declares workflow %q%s; put it beside this file, or name its file with file", displayDir(dir), name, nameHint(name, all))
		case 1:
			path = candidates[0]
		default:
			return nil, fmt.Errorf("workflow %q is declared by more than one file in %s (%s); name the one to start with file", name, displayDir(dir), strings.Join(bases(candidates), ", "))
		}
	}
	shown := file
	if shown == "" {
		shown = filepath.Base(path)
	}
	src, err := r.readInModule(dir, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("workflow %s: file %s does not exist", name, shown)
	case errors.Is(err, errOutside), errors.Is(err, ErrNotRegular), errors.Is(err, ErrTooLarge):
		return nil, fmt.Errorf("workflow %s: file %s is %w", name, shown, err)
	case err != nil:
		return nil, fmt.Errorf("workflow %s: file %s: %w", name, shown, err)
	}
	key := filepath.Clean(path)
	if i := indexOf(r.stack, key); i >= 0 {
		chain := make([]string, 0, len(r.stack)-i+1)
		for _, p := range r.stack[i:] {
			chain = append(chain, filepath.Base(p))
		}
		return nil, fmt.Errorf("child workflows form a cycle: %s -> %s; a workflow cannot start itself, even through others", strings.Join(chain, " -> "), filepath.Base(path))
	}
	p := r.parse(path, src)
	switch {
	case p.err != nil:
		return nil, fmt.Errorf("workflow %s: %w", name, p.err)
	case p.w == nil || p.w.Name != name:
		return nil, fmt.Errorf("%s does not declare workflow %q", file, name)
	case len(p.problems) > 0:
		first := p.problems[0]
		return nil, fmt.Errorf("workflow %s has problems of its own, the first at %s:%d:%d; fix them first", name, filepath.Base(path), first.Line, first.Column)
	}
	return p.w, nil
}

// dirNames maps each workflow file of dir to the name it declares.
func (r *resolver) dirNames(dir string) (map[string]string, error) {
	if names, ok := r.names[dir]; ok {
		return names, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("looking for workflows in %s: %w", displayDir(dir), err)
	}
	names := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if ext := filepath.Ext(e.Name()); ext != ".yaml" && ext != ".yml" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		src, err := r.readInModule(dir, path) // a file that may not be read cannot be the child
		if err != nil || !IsWorkflow(src) {
			continue
		}
		var head struct {
			Name string `yaml:"name"`
		}
		if yaml.Unmarshal(src, &head) == nil && head.Name != "" {
			names[path] = head.Name
		}
	}
	r.names[dir] = names
	return names, nil
}

func displayDir(dir string) string {
	if dir == "." {
		return "this directory"
	}
	return dir
}

func nameHint(name string, names []string) string {
	sort.Strings(names)
	for _, n := range names {
		if strings.Contains(n, name) || strings.Contains(name, n) {
			return fmt.Sprintf(" (did you mean %q?)", n)
		}
	}
	return ""
}

func bases(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
