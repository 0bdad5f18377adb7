package dashboard

import (
	"fmt"
	"strings"

	"github.com/effectivelabs/trellis/schema/spec"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// dag is a DAG as a page draws it: graph.Lay's layout, each node with the
// place of its label lines and, for a step of a run, the link to the
// step's details.
type dag struct {
	Width, Height float64
	Nodes         []dagNode
	Edges         []graph.LaidEdge
}

type dagNode struct {
	graph.LaidNode
	Href  string
	Texts []dagText
	// Round is the corner radius: a sleep is a rounded box.
	Round float64
	// Inner is the failure handler's second border.
	Inner *box
}

type box struct{ X, Y, W, H float64 }

type dagText struct {
	X, Y  float64
	Text  string
	First bool // the name, set in bold
}

// newDAG lays out w, coloured by status (step name to status; nil for
// none), each step linking to links[step name] when there is one.
func newDAG(w *spec.Workflow, status, links map[string]string) *dag {
	l := graph.Lay(w, graph.Options{Status: status})
	d := &dag{Width: l.Width, Height: l.Height, Edges: l.Edges}
	for _, n := range l.Nodes {
		dn := dagNode{LaidNode: n, Href: links[n.Step], Round: 3}
		switch n.Kind {
		case graph.SleepNode:
			dn.Round = n.H / 2
		case graph.HandlerNode:
			dn.Inner = &box{n.X + 3, n.Y + 3, n.W - 6, n.H - 6}
		}
		top := n.Y + (n.H-float64(len(n.Lines)*graph.LineHeight))/2
		for i, line := range n.Lines {
			dn.Texts = append(dn.Texts, dagText{X: n.X + n.W/2, Y: top + float64((i+1)*graph.LineHeight) - 4, Text: line, First: i == 0})
		}
		d.Nodes = append(d.Nodes, dn)
	}
	return d
}

// edgePath is the SVG path of an edge: a curve through its points, leaving
// and entering each point vertically.
func edgePath(pts []graph.Point) string {
	if len(pts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "M%.1f,%.1f", pts[0].X, pts[0].Y)
	for i := 1; i < len(pts); i++ {
		a, z := pts[i-1], pts[i]
		mid := (a.Y + z.Y) / 2
		fmt.Fprintf(&b, " C%.1f,%.1f %.1f,%.1f %.1f,%.1f", a.X, mid, z.X, mid, z.X, z.Y)
	}
	return b.String()
}
