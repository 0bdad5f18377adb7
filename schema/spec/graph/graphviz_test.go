package graph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goldenGraphs are the checked-in graphs of format f: the goldens beside
// the generator's test workflows, and the example's.
func goldenGraphs(t *testing.T, f Format) []string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"../../../testdata/gen/*/*" + f.Ext(), "../../../examples/*/*/*" + f.Ext()} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, found...)
	}
	return paths
}

// lookTool finds a program a test needs: the test skips without it, or
// fails when the environment variable require is 1 (CI sets it once it
// has installed the tool).
func lookTool(t *testing.T, name, require, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(require) == "1" {
			t.Fatalf("%s is not installed and %s=1: %s", name, require, install)
		}
		t.Skipf("%s is not installed (%s)", name, install)
	}
	return path
}

// TestDOTWithGraphviz has Graphviz lay out the DOT output and checks, in
// the SVG it draws, that every node shows exactly its label and tooltip:
// the hostile workflow's text is shown as text, not read as escapes or
// references. It also lays out every checked-in DOT golden.
func TestDOTWithGraphviz(t *testing.T) {
	dot := lookTool(t, "dot", "TRELLIS_REQUIRE_GRAPHVIZ", "apt-get install graphviz")
	svg := func(t *testing.T, src []byte) []byte {
		t.Helper()
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = bytes.NewReader(src)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Fatalf("dot -Tsvg: %v\n%s\ninput:\n%s", err, stderr.String(), src)
		}
		return out.Bytes()
	}

	t.Run("hostile", func(t *testing.T) {
		opts := Options{Status: hostileStatus()}
		src, err := Render(hostile(), DOT, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := svgNodes(svg(t, src))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]svgNode{}
		for _, n := range build(hostile(), opts).nodes {
			want[n.id] = svgNode{Lines: n.lines, Tooltip: tooltipText(n.tooltip)}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("nodes as Graphviz draws them (-want +got):\n%s", diff)
		}
	})
	for _, path := range goldenGraphs(t, DOT) {
		t.Run(path, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if nodes, err := svgNodes(svg(t, src)); err != nil || len(nodes) == 0 {
				t.Errorf("Graphviz drew %d nodes (%v)", len(nodes), err)
			}
		})
	}
}

// svgNode is what Graphviz drew for a node: its label's lines and its
// tooltip.
type svgNode struct {
	Lines   []string
	Tooltip string
}

// svgNodes reads the nodes of an SVG drawn by dot, by node name.
func svgNodes(svg []byte) (map[string]svgNode, error) {
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = false
	nodes := map[string]svgNode{}
	var (
		depth, nodeDepth int    // element depth, and that of the node group we are in (0: none)
		name, element    string // the node's name; the element whose text we read
		cur              svgNode
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nodes, nil
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			element = tok.Name.Local
			if tok.Name.Local == "g" && attr(tok, "class") == "node" {
				nodeDepth, name, cur = depth, "", svgNode{}
			}
			if nodeDepth > 0 && tok.Name.Local == "a" {
				cur.Tooltip = attr(tok, "title")
			}
		case xml.CharData:
			switch {
			case nodeDepth == 0:
			case element == "title" && name == "":
				name = string(tok)
			case element == "text":
				cur.Lines = append(cur.Lines, string(tok))
			}
		case xml.EndElement:
			element = ""
			if depth == nodeDepth {
				nodes[name], nodeDepth = cur, 0
			}
			depth--
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
