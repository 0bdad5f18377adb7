package gen

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/schema/spec/graph"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/gen")

// goldenRoot holds one directory per case. A case with a want.txt is
// invalid: want.txt is what lint prints for its YAML files. A case without
// one is valid: each YAML file has its expected <name>.gen.go beside it,
// and its graphs, <name>.mmd and <name>.dot (see package graph), and the
// directory is a Go package that must compile.
const goldenRoot = "../testdata/gen"

type goldenCase struct {
	name  string
	dir   string
	files []string // YAML files, relative to the module root's gen dir
}

func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	entries, err := os.ReadDir(goldenRoot)
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(goldenRoot, e.Name())
		files, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("golden case %s has no YAML file", dir)
		}
		cases = append(cases, goldenCase{name: e.Name(), dir: dir, files: files})
	}
	return cases
}

func (c goldenCase) invalid() bool {
	_, err := os.Stat(filepath.Join(c.dir, "want.txt"))
	return err == nil
}

// TestGolden lints and generates every case under testdata/gen and
// compares with the checked-in expectations. Run with -update to rewrite
// them after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	g := newGenerator(t)
	var packages []string
	for _, c := range goldenCases(t) {
		if c.invalid() {
			t.Run(c.name, func(t *testing.T) { testInvalidCase(t, g, c) })
			continue
		}
		packages = append(packages, "./testdata/gen/"+c.name)
		t.Run(c.name, func(t *testing.T) { testValidCase(t, g, c) })
	}
	if len(packages) < 3 {
		t.Fatalf("found %d valid golden cases, want at least 3", len(packages))
	}
	t.Run("compile", func(t *testing.T) { vetPackages(t, packages) })
}

func testInvalidCase(t *testing.T, g *Generator, c goldenCase) {
	problems, err := g.Lint(c.files)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 {
		t.Fatalf("lint found no problem in %s; an invalid case must have some", c.dir)
	}
	got := renderProblems(problems)
	compareGolden(t, filepath.Join(c.dir, "want.txt"), []byte(got))

	outputs, genProblems, err := g.Generate(c.files, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(outputs) != 0 || renderProblems(genProblems) != got {
		t.Errorf("generate returned %d outputs and problems:\n%s\nwant no output and the lint problems", len(outputs), renderProblems(genProblems))
	}
}

func testValidCase(t *testing.T, g *Generator, c goldenCase) {
	outputs, problems, err := g.Generate(c.files, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("a valid case has problems:\n%s", renderProblems(problems))
	}
	for _, out := range outputs {
		compareGolden(t, out.Path, out.Content)
		for _, f := range graph.Formats() {
			drawing, err := graph.Render(out.Spec, f, graph.Options{})
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, GraphPath(out.Source, f), drawing)
		}
	}
}

// renderProblems prints problems as lint does, with file base names so
// that the goldens do not depend on where the repository is.
func renderProblems(problems []Problem) string {
	var b strings.Builder
	for _, p := range problems {
		p.File = filepath.Base(p.File)
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gen/... -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale (-want +got); run go test ./gen/... -update and review the diff:\n%s", path, diff)
	}
}

// vetPackages compiles and vets the golden packages in one go invocation:
// generated code that does not compile against the runtime fails here.
func vetPackages(t *testing.T, packages []string) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	cmd := exec.Command(goTool, append([]string{"vet"}, packages...)...)
	cmd.Dir = ".."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go vet %s: %v\n%s", strings.Join(packages, " "), err, out.String())
	}
}

func newGenerator(t testing.TB) *Generator {
	t.Helper()
	g, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return g
}
