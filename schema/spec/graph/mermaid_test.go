package graph

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestMermaidWithMermaid parses the Mermaid output with Mermaid itself
// (testdata/mermaid/check.mjs, run by Node) and checks that every node
// has the shape and the text it should, as a page would show it: the
// hostile workflow's text as text, the statuses as classes. It also
// parses every checked-in Mermaid golden. It needs Node and the npm
// packages of testdata/mermaid:
//
//	npm ci --prefix schema/spec/graph/testdata/mermaid
//
// and skips without them, unless TRELLIS_REQUIRE_MERMAID=1.
func TestMermaidWithMermaid(t *testing.T) {
	install := "npm ci --prefix schema/spec/graph/testdata/mermaid"
	node := lookTool(t, "node", "TRELLIS_REQUIRE_MERMAID", "install Node.js 20 or newer, then "+install)
	if _, err := os.Stat("testdata/mermaid/node_modules/mermaid"); err != nil {
		if os.Getenv("TRELLIS_REQUIRE_MERMAID") == "1" {
			t.Fatalf("Mermaid is not installed and TRELLIS_REQUIRE_MERMAID=1: %s", install)
		}
		t.Skipf("Mermaid is not installed (%s)", install)
	}

	type doc struct {
		name, text string
		want       map[string]mermaidVertex // nil: only check that it parses
	}
	var docs []doc
	for _, opts := range []Options{{}, {Status: hostileStatus()}} {
		src, err := Render(hostile(), Mermaid, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]mermaidVertex{}
		for _, n := range build(hostile(), opts).nodes {
			v := mermaidVertex{Text: strings.Join(n.lines, "\n"), Shape: map[kind]string{
				codeStep: "square", sleepStep: "stadium", handler: "subroutine", failNote: "odd",
			}[n.kind]}
			if n.status != "" {
				v.Classes = []string{"status_" + n.status}
			}
			want[n.id] = v
		}
		docs = append(docs, doc{name: "hostile", text: string(src), want: want})
	}
	for _, path := range goldenGraphs(t, Mermaid) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc{name: path, text: string(src)})
	}

	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.text
	}
	results := runMermaidCheck(t, node, texts)
	for i, d := range docs {
		r := results[i]
		if r.Error != "" {
			t.Errorf("%s: Mermaid cannot parse it: %s\n%s", d.name, r.Error, d.text)
			continue
		}
		if len(r.Vertices) == 0 {
			t.Errorf("%s: Mermaid found %d nodes and %d edges", d.name, len(r.Vertices), len(r.Edges))
		}
		if d.want == nil {
			continue
		}
		for id, v := range r.Vertices {
			v.Text = strings.ReplaceAll(v.Text, "\u2060", "") // the word joiners mermaidEscape adds
			r.Vertices[id] = v
		}
		if diff := cmp.Diff(d.want, r.Vertices, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: nodes as Mermaid reads them (-want +got):\n%s", d.name, diff)
		}
	}
}

// mermaidVertex is a node as Mermaid's parser reads it.
type mermaidVertex struct {
	Text    string   `json:"text"`
	Shape   string   `json:"shape"`
	Classes []string `json:"classes"`
}

// mermaidResult is what check.mjs reports for one document.
type mermaidResult struct {
	Error    string                   `json:"error"`
	Vertices map[string]mermaidVertex `json:"vertices"`
	Edges    []struct {
		From   string `json:"from"`
		To     string `json:"to"`
		Stroke string `json:"stroke"`
	} `json:"edges"`
}

// runMermaidCheck has check.mjs parse the documents, in one Node process.
func runMermaidCheck(t *testing.T, node string, docs []string) []mermaidResult {
	t.Helper()
	in, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "check.mjs")
	cmd.Dir = "testdata/mermaid"
	cmd.Stdin = bytes.NewReader(in)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node check.mjs: %v\n%s", err, stderr.String())
	}
	var results []mermaidResult
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("node check.mjs printed %q: %v", out.String(), err)
	}
	if len(results) != len(docs) {
		t.Fatalf("check.mjs returned %d results for %d documents", len(results), len(docs))
	}
	return results
}
