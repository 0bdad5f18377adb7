package graph

import (
	"cmp"
	"slices"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/schema/spec"
)

// Sizes of a Layout, in SVG user units (CSS pixels). Labels are meant to
// be set in a monospace font of FontSize, whose characters are CharWidth
// wide, so that a label's width is known without measuring text: a
// drawing is laid out the same way on the server and in every browser.
const (
	FontSize   = 12
	LineHeight = 16
	CharWidth  = 7.3

	padX       = 10 // inside a node, left and right of its text
	padY       = 6  // above and below it
	layerGap   = 46 // between layers
	nodeGap    = 26 // between nodes of one layer
	margin     = 12 // around the drawing
	dummyWidth = 8  // of a point a long edge passes through
	minWidth   = 64 // of a node
)

// NodeKind is what a node of a Layout stands for, which decides its shape.
type NodeKind string

// The kinds of node.
const (
	// StepNode is a code step: a box.
	StepNode NodeKind = "step"
	// SleepNode is a durable sleep: a rounded box.
	SleepNode NodeKind = "sleep"
	// HandlerNode is the failure handler: a double-bordered box.
	HandlerNode NodeKind = "handler"
	// NoteNode is the "run fails" note that leads to the failure handler.
	NoteNode NodeKind = "note"
)

// Layout is the drawing Render writes as text, with every node and edge
// placed: steps in layers by their longest path from a root, so that
// every edge points down, ordered within a layer to keep edges from
// crossing.
type Layout struct {
	Width, Height float64
	// Nodes are in the order Render writes them: the steps in
	// declaration order, then the "run fails" note and the failure
	// handler.
	Nodes []LaidNode
	// Edges are in the order of each step's parents; the dashed one leads
	// from the note to the failure handler.
	Edges []LaidEdge
}

// LaidNode is a node of a Layout: (X, Y) is its top left corner.
type LaidNode struct {
	// ID is the node's id in Render's output (step_fraud_window).
	ID string
	// Step is the name of the step or failure handler it stands for; ""
	// for the note.
	Step string
	Kind NodeKind
	// Lines are the label, as Render writes it: the name, then the
	// sleep, conditions, retries and timeout.
	Lines []string
	// Tooltip is the full description, lines separated by '\n'.
	Tooltip string
	// Status is Options.Status's status of the step in Mermaid's class
	// form (completed, failed), and Fill and Stroke its colours; all
	// three are empty for a step without one.
	Status       string
	Fill, Stroke string
	X, Y, W, H   float64
}

// Point is a point of a Layout.
type Point struct{ X, Y float64 }

// LaidEdge is an edge of a Layout, from one node's bottom to another's
// top. Points are where it passes, in order: the first on From's bottom
// edge, the last on To's top edge, and between them a top and a bottom
// point for each layer it crosses. A smooth curve through them (vertical
// at each point) avoids the nodes of the layers it crosses.
type LaidEdge struct {
	From, To string
	Dashed   bool
	Points   []Point
}

// vnode is a node being laid out: a real node, or a point that an edge
// spanning several layers passes through in one layer it crosses.
type vnode struct {
	real  int // index in graph.nodes, -1 for a point
	layer int
	w, h  float64
	x     float64 // left edge
}

// vedge joins nodes of adjacent layers (from above to below); back edges
// of an invalid, cyclic workflow are not laid out this way.
type vedge struct{ from, to int }

// Lay lays out what Render would draw of w, which must not be nil, with
// the same Options. Like Render, it accepts invalid workflows: a cycle's
// edges are drawn, pointing up, and never loop the layout.
func Lay(w *spec.Workflow, opts Options) *Layout {
	g := build(w, opts)
	index := make(map[string]int, len(g.nodes))
	vs := make([]vnode, len(g.nodes))
	for i, n := range g.nodes {
		index[n.id] = i
		vs[i] = vnode{real: i, w: nodeWidth(n), h: float64(len(n.lines)*LineHeight + 2*padY)}
	}
	layer := layers(len(g.nodes), g.edges, index)
	for i := range vs {
		vs[i].layer = layer[i]
	}
	// Edges spanning several layers pass through a point per layer
	// crossed; chains[i] lists the points of edge i.
	var ves []vedge
	chains := make([][]int, len(g.edges))
	for i, e := range g.edges {
		from, to := index[e.from], index[e.to]
		if layer[to] <= layer[from] {
			continue // a back edge
		}
		prev := from
		for l := layer[from] + 1; l < layer[to]; l++ {
			vs = append(vs, vnode{real: -1, layer: l, w: dummyWidth})
			ves = append(ves, vedge{prev, len(vs) - 1})
			chains[i] = append(chains[i], len(vs)-1)
			prev = len(vs) - 1
		}
		ves = append(ves, vedge{prev, to})
	}
	rows := order(vs, ves)
	tops, heights := place(vs, ves, rows)

	out := &Layout{}
	for i, n := range g.nodes {
		v := vs[i]
		ln := LaidNode{
			ID: n.id, Step: n.step, Kind: kindName(n.kind), Lines: n.lines, Tooltip: n.tooltip,
			X: v.x, Y: tops[v.layer], W: v.w, H: v.h,
		}
		if n.status != "" {
			c := statusColours(n.status)
			ln.Status, ln.Fill, ln.Stroke = n.status, c.fill, c.stroke
		}
		out.Nodes = append(out.Nodes, ln)
		out.Width = max(out.Width, v.x+v.w+margin)
		out.Height = max(out.Height, tops[v.layer]+v.h+margin)
	}
	for i, e := range g.edges {
		from, to := out.Nodes[index[e.from]], out.Nodes[index[e.to]]
		pts := []Point{{from.X + from.W/2, from.Y + from.H}}
		for _, d := range chains[i] {
			v := vs[d]
			x := v.x + v.w/2
			pts = append(pts, Point{x, tops[v.layer]}, Point{x, tops[v.layer] + heights[v.layer]})
		}
		pts = append(pts, Point{to.X + to.W/2, to.Y})
		out.Edges = append(out.Edges, LaidEdge{From: e.from, To: e.to, Dashed: e.dashed, Points: pts})
	}
	for _, v := range vs {
		out.Width = max(out.Width, v.x+v.w+margin)
	}
	return out
}

func kindName(k kind) NodeKind {
	switch k {
	case sleepStep:
		return SleepNode
	case handler:
		return HandlerNode
	case failNote:
		return NoteNode
	}
	return StepNode
}

func nodeWidth(n node) float64 {
	longest := 0
	for _, l := range n.lines {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	return max(minWidth, float64(longest)*CharWidth+2*padX)
}

// layers puts each node one layer below its lowest parent (the longest
// path from a root), in topological order. Nodes on a cycle, which a valid
// workflow has none of, stay where their other parents put them.
func layers(n int, edges []edge, index map[string]int) []int {
	layer := make([]int, n)
	indegree := make([]int, n)
	children := make([][]int, n)
	for _, e := range edges {
		from, to := index[e.from], index[e.to]
		children[from] = append(children[from], to)
		indegree[to]++
	}
	var ready []int
	for i := range n {
		if indegree[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		u := ready[0]
		ready = ready[1:]
		for _, c := range children[u] {
			layer[c] = max(layer[c], layer[u]+1)
			if indegree[c]--; indegree[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return layer
}

// sweeps is how many times order reorders the layers, alternately from the
// top and from the bottom.
const sweeps = 8

// order returns the nodes of each layer, left to right: first in the order
// they were declared, then reordered by the barycentre heuristic (each
// node at the mean position of its neighbours in the layer before), the
// order with the fewest crossings kept.
func order(vs []vnode, ves []vedge) [][]int {
	depth := 0
	for _, v := range vs {
		depth = max(depth, v.layer+1)
	}
	rows := make([][]int, depth)
	for i, v := range vs {
		rows[v.layer] = append(rows[v.layer], i)
	}
	up := make([][]int, len(vs))
	down := make([][]int, len(vs))
	for _, e := range ves {
		up[e.to] = append(up[e.to], e.from)
		down[e.from] = append(down[e.from], e.to)
	}
	pos := make([]float64, len(vs))
	index := func() {
		for _, row := range rows {
			for i, v := range row {
				pos[v] = float64(i)
			}
		}
	}
	index()
	best, fewest := cloneRows(rows), crossings(vs, ves, pos)
	for s := range sweeps {
		seq, neighbours := rows, up
		if s%2 == 1 {
			seq, neighbours = reversed(rows), down
		}
		for _, row := range seq[1:] {
			bary := make(map[int]float64, len(row))
			for _, v := range row {
				bary[v] = pos[v]
				if ns := neighbours[v]; len(ns) > 0 {
					sum := 0.0
					for _, u := range ns {
						sum += pos[u]
					}
					bary[v] = sum / float64(len(ns))
				}
			}
			slices.SortStableFunc(row, func(a, b int) int { return cmp.Compare(bary[a], bary[b]) })
			for i, v := range row {
				pos[v] = float64(i)
			}
		}
		if c := crossings(vs, ves, pos); c < fewest {
			best, fewest = cloneRows(rows), c
		}
	}
	return best
}

func reversed(rows [][]int) [][]int {
	out := slices.Clone(rows)
	slices.Reverse(out)
	return out
}

func cloneRows(rows [][]int) [][]int {
	out := make([][]int, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}

// crossings counts the pairs of edges leaving the same layer that cross,
// with the nodes at pos. Every edge joins adjacent layers.
func crossings(vs []vnode, ves []vedge, pos []float64) int {
	n := 0
	for i, a := range ves {
		for _, b := range ves[i+1:] {
			if vs[a.from].layer == vs[b.from].layer && (pos[a.from]-pos[b.from])*(pos[a.to]-pos[b.to]) < 0 {
				n++
			}
		}
	}
	return n
}

// place sets each node's x and returns each layer's top and height. Nodes
// keep the order of rows, at least nodeGap apart; each pass moves nodes
// towards the mean centre of their neighbours in the layer before it.
func place(vs []vnode, ves []vedge, rows [][]int) (tops, heights []float64) {
	heights = make([]float64, len(rows))
	for _, v := range vs {
		heights[v.layer] = max(heights[v.layer], v.h)
	}
	tops = make([]float64, len(rows))
	y := float64(margin)
	for l := range rows {
		tops[l] = y
		y += heights[l] + layerGap
	}
	for _, row := range rows { // packed from the left to begin with
		x := 0.0
		for _, v := range row {
			vs[v].x = x
			x += vs[v].w + nodeGap
		}
	}
	up := make([][]int, len(vs))
	down := make([][]int, len(vs))
	for _, e := range ves {
		up[e.to] = append(up[e.to], e.from)
		down[e.from] = append(down[e.from], e.to)
	}
	centre := func(v int) float64 { return vs[v].x + vs[v].w/2 }
	for pass := range 4 {
		seq, neighbours := rows, up
		if pass%2 == 1 {
			seq, neighbours = reversed(rows), down
		}
		for _, row := range seq[1:] {
			want := make([]float64, len(row)) // desired left edges
			for i, v := range row {
				want[i] = vs[v].x
				if ns := neighbours[v]; len(ns) > 0 {
					sum := 0.0
					for _, u := range ns {
						sum += centre(u)
					}
					want[i] = sum/float64(len(ns)) - vs[v].w/2
				}
			}
			// The mean of a placement pushed right and one pushed left:
			// both keep the order and the gaps, so their mean does too.
			right := make([]float64, len(row))
			for i := range row {
				right[i] = want[i]
				if i > 0 {
					right[i] = max(right[i], right[i-1]+vs[row[i-1]].w+nodeGap)
				}
			}
			left := make([]float64, len(row))
			for i := len(row) - 1; i >= 0; i-- {
				left[i] = want[i]
				if i < len(row)-1 {
					left[i] = min(left[i], left[i+1]-vs[row[i]].w-nodeGap)
				}
			}
			for i, v := range row {
				vs[v].x = (left[i] + right[i]) / 2
			}
		}
	}
	minX := 0.0
	for i, v := range vs {
		if i == 0 || v.x < minX {
			minX = v.x
		}
	}
	for i := range vs {
		vs[i].x += margin - minX
	}
	return tops, heights
}
