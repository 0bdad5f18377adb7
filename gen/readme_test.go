package gen

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/schema/spec/graph"
	"github.com/google/go-cmp/cmp"
)

// TestReadmeGraph checks that the README's Mermaid block is the graph of
// the example workflow as trellis graph draws it today.
func TestReadmeGraph(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var block *strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case block == nil && line == "```mermaid":
			block = &strings.Builder{}
		case block != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d ```mermaid blocks, want 1: the example's graph", len(blocks))
	}

	const example = "../examples/orders/workflow/orders.yaml"
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	f := newGenerator(t).Check(example, src)
	if len(f.Problems) > 0 {
		t.Fatalf("the example has problems:\n%s", renderProblems(f.Problems))
	}
	want, err := graph.Render(f.Spec(), graph.Mermaid, graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), blocks[0]); diff != "" {
		t.Errorf("README.md's mermaid block is not the example's graph (-want +got); paste the output of trellis graph examples/orders/workflow/orders.yaml:\n%s", diff)
	}
}
