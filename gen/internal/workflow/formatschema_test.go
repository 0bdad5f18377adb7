package workflow

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFormatSchemaAgreesWithChecks guards the promise that each problem is
// reported once, in the clearer wording: for every golden file, whatever
// the format schema (schema/workflow.schema.json) finds, a semantic check
// finds too, at the same position and for the same rule. A schema change
// that the checks do not follow, or the reverse, fails here.
func TestFormatSchemaAgreesWithChecks(t *testing.T) {
	p := newParser(t)
	files, err := filepath.Glob("../../../testdata/gen/*/*.y*ml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden workflows found: %v", err)
	}
	total := 0
	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(file))+"/"+filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			schemaFound := NewProblems(file)
			root := load(src, NewProblems(file))
			if root == nil || root.Kind != KindMap {
				return
			}
			p.format.validate(root, schemaFound)
			semantic := NewProblems(file)
			d := &decoder{probs: semantic, src: src}
			d.workflow(root)
			type key struct {
				line, col int
				rule      string
			}
			covered := map[key]bool{}
			for _, pr := range semantic.list {
				covered[key{pr.Line, pr.Column, pr.rule}] = true
			}
			total += len(schemaFound.list)
			for _, pr := range schemaFound.list {
				if !covered[key{pr.Line, pr.Column, pr.rule}] {
					t.Errorf("only the format schema reports %s (rule %s); add the check to the decoder", pr, pr.rule)
				}
			}
		})
	}
	if total < 20 {
		t.Errorf("the format schema found %d problems in all golden files; it is not being applied", total)
	}
}

func newParser(t testing.TB) *Parser {
	t.Helper()
	p, err := NewParser()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
