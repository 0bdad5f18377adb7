// Package dag holds the pure rules of workflow execution: the step graph,
// when a step becomes ready, when it is skipped, when a run is finished,
// how long a retry waits and what a failure cancels. It does no I/O and
// reads no clock, so every rule is tested with plain values, and both
// stores (memory and Postgres) implement exactly these rules.
package dag

import (
	"errors"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
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

// Build checks a workflow (spec.Workflow.Check) and links its steps into a
// graph; the failure handler, if any, becomes the last step. The error
// lists every problem Check found.
func Build(w *spec.Workflow) (*Graph, error) {
	if problems := w.Check(); len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p.String())
		}
		return nil, errors.Join(errs...)
	}
	n := len(w.Steps)
	g := &Graph{Steps: make([]Step, n, n+1), byName: make(map[string]int, n+1), onFailure: -1}
	for i, s := range w.Steps {
		g.byName[s.Name] = i
	}
	maySkip := w.MaySkip()
	for i, s := range w.Steps {
		st := Step{
			Name: s.Name, Index: i, Kind: store.KindCode, Retry: s.Retry, Timeout: s.Timeout,
			HasSkipIf: len(s.SkipIf) > 0, MaySkip: maySkip[i],
		}
		switch {
		case s.IsSleep():
			st.Kind, st.Sleep = store.KindSleep, s.Sleep
		case s.IsMap():
			st.Kind = store.KindMap
		case s.IsChild():
			st.Kind = store.KindChild
		case s.IsWait():
			st.Kind = store.KindWait
			st.Retry = spec.RetryPolicy{} // it runs no code: nothing to retry
		}
		for _, p := range s.Parents {
			pi := g.byName[p]
			st.Parents = append(st.Parents, pi)
		}
		g.Steps[i] = st
	}
	for i := range g.Steps {
		for _, p := range g.Steps[i].Parents {
			g.Steps[p].Children = append(g.Steps[p].Children, i)
		}
	}
	if h := w.OnFailure; h != nil {
		g.onFailure = n
		g.byName[h.Name] = n
		g.Steps = append(g.Steps, Step{Name: h.Name, Index: n, Kind: store.KindOnFailure, Retry: h.Retry, Timeout: h.Timeout})
	}
	return g, nil
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

// Below returns step i and every step below it, its descendants, marked
// by index: the steps a rerun from step i runs again.
func (g *Graph) Below(i int) []bool {
	below := make([]bool, len(g.Steps))
	stack := []int{i}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if below[s] {
			continue
		}
		below[s] = true
		stack = append(stack, g.Steps[s].Children...)
	}
	return below
}
