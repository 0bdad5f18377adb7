package gen

import (
	"bytes"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// TestGeneratedCodeIsFresh fails when generated code checked into the
// repository no longer matches its workflow file: someone edited the YAML
// (or the generator) without running go generate. It regenerates every
// <name>.gen.go that sits beside a <name>.yaml in memory, into the package
// the checked-in file declares, and compares bytes; and so for the graphs
// generate -graph wrote beside them (<name>.mmd, <name>.dot). The goldens
// under testdata/gen have their own test.
func TestGeneratedCodeIsFresh(t *testing.T) {
	g := newGenerator(t)
	const repo = ".."
	checked := 0
	err := filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || path == filepath.Join(repo, "testdata", "gen") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		existing, err := os.ReadFile(OutputPath(path))
		if errors.Is(err, fs.ErrNotExist) {
			return nil // no generated code beside this file
		}
		if err != nil {
			return err
		}
		checked++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		clause, err := parser.ParseFile(token.NewFileSet(), OutputPath(path), existing, parser.PackageClauseOnly)
		if err != nil {
			t.Errorf("%s: %v", OutputPath(path), err)
			return nil
		}
		f := g.Check(path, src)
		if len(f.Problems) > 0 {
			t.Errorf("%s has problems, so its generated code cannot be current:\n%s", path, renderProblems(f.Problems))
			return nil
		}
		fresh, err := GenerateFile(f, clause.Name.Name)
		if err != nil {
			t.Errorf("regenerating %s: %v", path, err)
			return nil
		}
		if !bytes.Equal(fresh, existing) {
			t.Errorf("%s is stale: run go generate in %s (or trellis generate %s)", OutputPath(path), filepath.Dir(path), path)
		}
		for _, format := range graph.Formats() {
			drawn, err := os.ReadFile(GraphPath(path, format))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			fresh, err := graph.Render(f.Spec(), format, graph.Options{})
			if err != nil {
				return err
			}
			if !bytes.Equal(fresh, drawn) {
				t.Errorf("%s is stale: run go generate in %s (or trellis generate -graph %s %s)", GraphPath(path, format), filepath.Dir(path), format, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no generated code beside a workflow file; the walk is broken (examples/orders should have some)")
	}
}
