package workflow

import (
	"fmt"
	"strings"

	"github.com/effectivelabs/trellis/runtime/dag"
)

// checkGraph checks the step graph: unique names, parents that exist and
// are not the step itself, no cycles, and an onFailure handler whose name
// no step uses. It then computes MaySkip for every step.
func checkGraph(w *Workflow, probs *Problems) {
	index := map[string]int{}
	var names []string
	for i, s := range w.Steps {
		if s.Name == "" {
			continue
		}
		if first, dup := index[s.Name]; dup {
			probs.Add(s.Pos, "", "step name %q is used twice (first at line %d); step names must be unique", s.Name, w.Steps[first].Pos.Line)
			continue
		}
		index[s.Name] = i
		names = append(names, s.Name)
	}
	handler := ""
	if h := w.OnFailure; h != nil && h.Name != "" {
		handler = h.Name
		if i, clash := index[h.Name]; clash {
			probs.Add(h.Pos, "", "onFailure name %q is also the name of a step (line %d); give the failure handler a name of its own", h.Name, w.Steps[i].Pos.Line)
		}
	}
	parents := make([][]int, len(w.Steps))
	for i, s := range w.Steps {
		for _, p := range s.Parents {
			pi, ok := index[p.Name]
			switch {
			case p.Name == s.Name:
				probs.Add(p.Pos, "", "%s lists itself as a parent; remove it", s.label)
			case !ok && p.Name == handler:
				probs.Add(p.Pos, "", "%s: parent %q is the onFailure handler, which runs only when a run fails and cannot be a parent", s.label, p.Name)
			case !ok:
				probs.Add(p.Pos, "", "%s: unknown parent %q%s", s.label, p.Name, parentHint(p.Name, names))
			default:
				parents[i] = append(parents[i], pi)
			}
		}
	}
	cyclic := reportCycles(w, parents, probs)
	if !cyclic {
		computeMaySkip(w, parents)
	}
}

func parentHint(name string, steps []string) string {
	if guess := closest(name, steps); guess != "" {
		return fmt.Sprintf("; did you mean %q?", guess)
	}
	if len(steps) == 0 {
		return ""
	}
	return fmt.Sprintf(" (steps: %s)", strings.Join(steps, ", "))
}

// reportCycles reports every independent cycle: after reporting one, it
// removes the parent link that closes it and looks again. It reports
// whether there was any.
func reportCycles(w *Workflow, parents [][]int, probs *Problems) bool {
	links := make([][]int, len(parents))
	for i := range parents {
		links[i] = append([]int(nil), parents[i]...)
	}
	found := false
	for range w.Steps {
		cycle := dag.Cycle(links)
		if cycle == nil {
			break
		}
		found = true
		names := make([]string, len(cycle))
		for i, n := range cycle {
			names[i] = w.Steps[n].Name
		}
		// The cycle starts at its earliest-declared step, whose parent
		// list holds the link that closes it.
		first, last := cycle[0], cycle[len(cycle)-2]
		pos := w.Steps[first].Pos
		for _, p := range w.Steps[first].Parents {
			if p.Name == w.Steps[last].Name {
				pos = p.Pos
			}
		}
		probs.Add(pos, "", "steps form a cycle: %s; a step cannot wait for itself, remove one of these parent links", strings.Join(names, " -> "))
		links[first] = without(links[first], last)
	}
	return found
}

func without(list []int, x int) []int {
	out := list[:0:0]
	for _, y := range list {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

// computeMaySkip applies the runtime's static skip rule (package dag): a
// step may be skipped when it has skipIf, or when it has parents and all
// of them may be skipped.
func computeMaySkip(w *Workflow, parents [][]int) {
	for _, i := range dag.TopoOrder(parents) {
		s := w.Steps[i]
		if len(s.SkipIf) > 0 {
			s.MaySkip = true
			continue
		}
		s.MaySkip = len(parents[i]) > 0
		for _, p := range parents[i] {
			if !w.Steps[p].MaySkip {
				s.MaySkip = false
				break
			}
		}
	}
}
