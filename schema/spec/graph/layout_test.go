package graph

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/schema/spec"
)

// orders is the example order workflow (examples/orders): two branches that merge, a
// sleep, conditions and a failure handler.
func orders() *spec.Workflow {
	return &spec.Workflow{
		Name: "order-processing",
		Steps: []spec.Step{
			{Name: "validate"},
			{Name: "charge", Parents: []string{"validate"}, SkipIf: []string{"!parents.validate.isValid"}},
			{Name: "reject", Parents: []string{"validate"}, SkipIf: []string{"parents.validate.isValid"}},
			{Name: "fraud-window", Parents: []string{"charge"}, Sleep: 24 * time.Hour},
			{Name: "prepare-shipment", Parents: []string{"charge"}},
			{Name: "ship", Parents: []string{"fraud-window", "prepare-shipment"}},
			{Name: "finalize", Parents: []string{"ship", "reject"}},
		},
		OnFailure: &spec.OnFailure{Name: "notify-admin"},
	}
}

func TestLayPlacesEveryStepBelowItsParents(t *testing.T) {
	l := Lay(orders(), Options{Status: map[string]string{"charge": "FAILED", "validate": "completed"}})
	byStep := map[string]LaidNode{}
	var kinds []string
	for _, n := range l.Nodes {
		byStep[n.Step] = n
		kinds = append(kinds, fmt.Sprintf("%s:%s", n.Step, n.Kind))
		if n.X < 0 || n.Y < 0 || n.X+n.W > l.Width || n.Y+n.H > l.Height {
			t.Errorf("node %s at (%v,%v) %vx%v lies outside the %vx%v drawing", n.ID, n.X, n.Y, n.W, n.H, l.Width, l.Height)
		}
	}
	want := []string{"validate:step", "charge:step", "reject:step", "fraud-window:sleep", "prepare-shipment:step",
		"ship:step", "finalize:step", ":note", "notify-admin:handler"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if n := byStep["charge"]; n.Status != "failed" || n.Fill != "#ffc9c9" || byStep["ship"].Status != "" {
		t.Errorf("charge has status %q fill %q, ship %q: want failed charge only", n.Status, n.Fill, byStep["ship"].Status)
	}
	// Every edge leaves its parent's bottom and reaches its child's top,
	// going down all the way.
	byID := map[string]LaidNode{}
	for _, n := range l.Nodes {
		byID[n.ID] = n
	}
	for _, e := range l.Edges {
		from, to := byID[e.From], byID[e.To]
		first, last := e.Points[0], e.Points[len(e.Points)-1]
		if first != (Point{from.X + from.W/2, from.Y + from.H}) || last != (Point{to.X + to.W/2, to.Y}) {
			t.Errorf("edge %s -> %s runs from %v to %v, not from bottom to top", e.From, e.To, first, last)
		}
		for i := 1; i < len(e.Points); i++ {
			if e.Points[i].Y < e.Points[i-1].Y {
				t.Errorf("edge %s -> %s goes up at point %d: %v", e.From, e.To, i, e.Points)
			}
		}
	}
	// finalize's edge from reject crosses two layers: it passes through a
	// top and a bottom point in each.
	for _, e := range l.Edges {
		if e.From == "step_reject" && len(e.Points) != 2+2*2 {
			t.Errorf("reject -> finalize has points %v, want 2 per crossed layer", e.Points)
		}
	}
	if diff := cmp.Diff(l, Lay(orders(), Options{Status: map[string]string{"charge": "FAILED", "validate": "completed"}})); diff != "" {
		t.Errorf("a second layout differs (-first +second):\n%s", diff)
	}
}

func TestLayKeepsNodesOfALayerApart(t *testing.T) {
	w := &spec.Workflow{Name: "fan", Steps: []spec.Step{{Name: "root"}}}
	for i := range 12 {
		w.Steps = append(w.Steps, spec.Step{Name: fmt.Sprintf("leaf-%d-with-a-longish-name", i), Parents: []string{"root"}})
	}
	w.Steps = append(w.Steps, spec.Step{Name: "join", Parents: []string{"leaf-0-with-a-longish-name", "leaf-11-with-a-longish-name"}})
	l := Lay(w, Options{})
	for i, a := range l.Nodes {
		for _, b := range l.Nodes[i+1:] {
			if a.Y == b.Y && a.X < b.X+b.W && b.X < a.X+a.W {
				t.Errorf("%s and %s overlap", a.Step, b.Step)
			}
		}
	}
}

func TestLayHostileAndCyclicWorkflows(t *testing.T) {
	l := Lay(hostile(), Options{Status: hostileStatus()})
	if len(l.Nodes) != len(hostile().Steps)+2 {
		t.Errorf("hostile: %d nodes, want every step, the note and the handler", len(l.Nodes))
	}
	cyclic := &spec.Workflow{Name: "loop", Steps: []spec.Step{
		{Name: "a", Parents: []string{"c"}}, {Name: "b", Parents: []string{"a"}}, {Name: "c", Parents: []string{"b"}}, {Name: "d"},
	}}
	if l := Lay(cyclic, Options{}); len(l.Nodes) != 4 || len(l.Edges) != 3 {
		t.Errorf("cyclic: %d nodes and %d edges, want 4 and 3", len(l.Nodes), len(l.Edges))
	}
}
