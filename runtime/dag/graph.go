// Package dag holds the pure rules of workflow execution: the step graph,
// when a step becomes ready, when it is skipped, when a run is finished,
// how long a retry waits and what a failure cancels. It does no I/O and
// reads no clock, so every rule is tested with plain values, and both
// stores (memory and Postgres) implement exactly these rules.
package dag

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/spec"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Step is one node of a Graph. Steps are addressed by their index, which is
// their position in the workflow file; the failure handler, if any, comes
// last.
type Step struct {
	Name     string
	Index    int
	Kind     store.Kind
	Parents  []int
	Children []int
	Sleep    time.Duration
	Retry    spec.RetryPolicy
	Timeout  time.Duration
	// HasSkipIf is true when the step declares skipIf conditions.
	HasSkipIf bool
	// MaySkip is true when the step can end SKIPPED: it has skipIf
	// conditions, or it has parents that may all be skipped.
	MaySkip bool
}

// Plain reports whether a claimed task of this step always runs its code:
// it is a code step that can never be skipped. A store may record such a
// task as STARTED when it is claimed, saving a round trip.
func (s *Step) Plain() bool { return s.Kind == store.KindCode && !s.MaySkip }

// MaxAttempts is the number of attempts the step may make.
func (s *Step) MaxAttempts() int { return s.Retry.MaxRetries + 1 }

// Graph is a validated workflow DAG.
type Graph struct {
	Steps     []Step
	byName    map[string]int
	onFailure int // index of the failure handler, or -1
}

// Node is the input to Build: a step as declared.
type Node struct {
	Name      string
	Kind      store.Kind
	Parents   []string
	HasSkipIf bool
	Sleep     time.Duration
	Retry     spec.RetryPolicy
	Timeout   time.Duration
}

// Build validates the nodes and links them into a graph. The failure
// handler, if any, must be the last node and must have no parents.
func Build(nodes []Node) (*Graph, error) {
	g := &Graph{byName: make(map[string]int, len(nodes)), onFailure: -1}
	var errs []error
	for i, n := range nodes {
		if _, dup := g.byName[n.Name]; dup {
			errs = append(errs, fmt.Errorf("step %q is declared twice", n.Name))
			continue
		}
		g.byName[n.Name] = i
		if n.Kind == store.KindOnFailure {
			if i != len(nodes)-1 {
				errs = append(errs, fmt.Errorf("failure handler %q must be the last node", n.Name))
			}
			g.onFailure = i
		}
	}
	g.Steps = make([]Step, len(nodes))
	for i, n := range nodes {
		s := Step{
			Name: n.Name, Index: i, Kind: n.Kind, Sleep: n.Sleep, Retry: n.Retry,
			Timeout: n.Timeout, HasSkipIf: n.HasSkipIf,
		}
		if n.Kind == store.KindOnFailure && len(n.Parents) > 0 {
			errs = append(errs, fmt.Errorf("failure handler %q cannot have parents", n.Name))
		}
		seen := map[int]bool{}
		for _, p := range n.Parents {
			pi, ok := g.byName[p]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("step %q: unknown parent %q", n.Name, p))
			case pi == i:
				errs = append(errs, fmt.Errorf("step %q lists itself as a parent", n.Name))
			case pi == g.onFailure:
				errs = append(errs, fmt.Errorf("step %q: the failure handler %q cannot be a parent", n.Name, p))
			case seen[pi]:
				errs = append(errs, fmt.Errorf("step %q lists parent %q twice", n.Name, p))
			default:
				seen[pi] = true
				s.Parents = append(s.Parents, pi)
			}
		}
		if err := checkPolicy(n); err != nil {
			errs = append(errs, err)
		}
		g.Steps[i] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	parents := make([][]int, len(g.Steps))
	for i := range g.Steps {
		parents[i] = g.Steps[i].Parents
	}
	if cycle := Cycle(parents); cycle != nil {
		names := make([]string, len(cycle))
		for i, c := range cycle {
			names[i] = g.Steps[c].Name
		}
		return nil, fmt.Errorf("steps form a cycle: %s", strings.Join(names, " -> "))
	}
	for i := range g.Steps {
		for _, p := range g.Steps[i].Parents {
			g.Steps[p].Children = append(g.Steps[p].Children, i)
		}
	}
	for _, i := range TopoOrder(parents) {
		g.Steps[i].MaySkip = maySkip(g, i)
	}
	return g, nil
}

func checkPolicy(n Node) error {
	r := n.Retry
	switch {
	case r.MaxRetries < 0:
		return fmt.Errorf("step %q: maxRetries must not be negative", n.Name)
	case r.MaxRetries > 0 && r.InitialDelay <= 0:
		return fmt.Errorf("step %q: initialDelay must be positive", n.Name)
	case r.MaxRetries > 0 && r.BackoffFactor < 1:
		return fmt.Errorf("step %q: backoffFactor must be at least 1", n.Name)
	case r.MaxRetries > 0 && r.MaxDelay < r.InitialDelay:
		return fmt.Errorf("step %q: maxDelay must be at least initialDelay", n.Name)
	case n.Timeout < 0:
		return fmt.Errorf("step %q: timeout must not be negative", n.Name)
	case n.Kind == store.KindSleep && n.Sleep <= 0:
		return fmt.Errorf("step %q: sleep must be positive", n.Name)
	}
	return nil
}

// maySkip is the static skip rule: a step may be skipped when it has
// conditions, or when it has parents and every parent may be skipped.
func maySkip(g *Graph, i int) bool {
	s := &g.Steps[i]
	if s.HasSkipIf {
		return true
	}
	if len(s.Parents) == 0 {
		return false
	}
	for _, p := range s.Parents {
		if !g.Steps[p].MaySkip {
			return false
		}
	}
	return true
}

// Step returns the step with the given name.
func (g *Graph) Step(name string) (*Step, bool) {
	i, ok := g.byName[name]
	if !ok {
		return nil, false
	}
	return &g.Steps[i], true
}

// OnFailure returns the failure handler, if the workflow has one.
func (g *Graph) OnFailure() (*Step, bool) {
	if g.onFailure < 0 {
		return nil, false
	}
	return &g.Steps[g.onFailure], true
}

// Cycle returns one cycle of the graph given as parent lists, as a list of
// node indexes that starts and ends with the same node, or nil when the
// graph is acyclic. The cycle is reported in parent-to-child order, so for
// a -> b -> c -> a (b's parent is a, and so on) it reads the way the arrows
// point, starting from its earliest-declared node.
func Cycle(parents [][]int) []int {
	const (
		unvisited = iota
		active
		done
	)
	state := make([]int, len(parents))
	var stack []int
	var found []int
	var visit func(n int) bool
	visit = func(n int) bool {
		state[n] = active
		stack = append(stack, n)
		for _, p := range parents[n] {
			if p < 0 || p >= len(parents) {
				continue
			}
			switch state[p] {
			case active:
				// The stack holds a child-to-parent path; the cycle is the
				// part from p to n, reversed into parent-to-child order.
				start := len(stack) - 1
				for stack[start] != p {
					start--
				}
				path := append([]int(nil), stack[start:]...)
				for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
					path[l], path[r] = path[r], path[l]
				}
				// Start at the earliest-declared node so the report is
				// stable, and end where it starts.
				low := 0
				for i := range path {
					if path[i] < path[low] {
						low = i
					}
				}
				found = slices.Concat(path[low:], path[:low], path[low:low+1])
				return true
			case unvisited:
				if visit(p) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	for n := range parents {
		if state[n] == unvisited && visit(n) {
			return found
		}
	}
	return nil
}

// TopoOrder returns the node indexes with every parent before its
// children; ties keep declaration order. The graph must be acyclic.
func TopoOrder(parents [][]int) []int {
	pending := make([]int, len(parents))
	children := make([][]int, len(parents))
	for i, ps := range parents {
		pending[i] = len(ps)
		for _, p := range ps {
			children[p] = append(children[p], i)
		}
	}
	var order, ready []int
	for i := range parents {
		if pending[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, c := range children[n] {
			if pending[c]--; pending[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return order
}
