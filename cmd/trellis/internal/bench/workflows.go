package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

// shape is a bench workflow: its spec, the name the report uses, and its
// steps' parents by index (a step's index is its position in the spec).
type shape struct {
	label   string
	spec    *runtime.WorkflowSpec
	parents [][]int
}

// tasks is the number of tasks one run of the shape has.
func (s shape) tasks() int { return len(s.spec.Steps) }

// Workflow names of the bench workflows, as stored in trellis_runs.
const (
	chainName   = "bench-chain"
	diamondName = "bench-diamond"
	singleName  = "bench-single"
	sleepName   = "bench-sleep"
	pairName    = "bench-pair"
)

// Labels the report and Throughput.Workflow use.
const (
	// ChainLabel is s1 -> s2 -> s3 -> s4 -> s5.
	ChainLabel = "chain-5"
	// DiamondLabel is a -> b1..b4 -> c.
	DiamondLabel = "diamond-6"
)

// chainShape is s1 -> s2 -> s3 -> s4 -> s5.
func chainShape() shape {
	return newShape(ChainLabel, chainName, []step{
		{name: "s1"}, {name: "s2", parents: []string{"s1"}}, {name: "s3", parents: []string{"s2"}},
		{name: "s4", parents: []string{"s3"}}, {name: "s5", parents: []string{"s4"}},
	})
}

// diamondShape is a -> b1..b4 -> c.
func diamondShape() shape {
	b := []string{"b1", "b2", "b3", "b4"}
	steps := []step{{name: "a"}}
	for _, n := range b {
		steps = append(steps, step{name: n, parents: []string{"a"}})
	}
	return newShape(DiamondLabel, diamondName, append(steps, step{name: "c", parents: b}))
}

// singleShape is one step: the tasks of the fairness scenarios.
func singleShape() shape {
	return newShape("single", singleName, []step{{name: "only"}})
}

// pairShape is two no-op steps, a -> b: the sleep scenario's runs without
// the sleep.
func pairShape() shape {
	return newShape("pair", pairName, []step{{name: "a"}, {name: "b", parents: []string{"a"}}})
}

// sleepShape is a durable sleep followed by a no-op step.
func sleepShape(d time.Duration) shape {
	return newShape("sleep", sleepName, []step{{name: "nap", sleep: d}, {name: "after", parents: []string{"nap"}}})
}

// workerShapes are the workflows worker processes execute.
func workerShapes() []shape {
	return []shape{chainShape(), diamondShape(), singleShape(), keyedShape(), hotKeyShape(), rateKeysShape(), rateHotShape()}
}

type step struct {
	name    string
	parents []string
	sleep   time.Duration
}

func newShape(label, name string, steps []step) shape {
	spec := &runtime.WorkflowSpec{
		Name:        name,
		Description: "Trellis bench workflow: " + label + ", steps that do nothing.",
		InputSchema: `{"type":"object"}`,
	}
	index := map[string]int{}
	parents := make([][]int, len(steps))
	for i, s := range steps {
		index[s.name] = i
		for _, p := range s.parents {
			parents[i] = append(parents[i], index[p])
		}
		spec.Steps = append(spec.Steps, runtime.StepSpec{
			Name: s.name, Parents: s.parents, Sleep: s.sleep, Retry: runtime.DefaultRetryPolicy(),
		})
	}
	return shape{label: label, spec: spec, parents: parents}
}

// noop is the code of every bench step: it does nothing.
func noop(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil }

// register registers shapes with no-op code on an engine.
func register(e *runtime.Engine, shapes ...shape) (map[string]*runtime.Workflow, error) {
	wfs := map[string]*runtime.Workflow{}
	for _, s := range shapes {
		h := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
		for _, st := range s.spec.Steps {
			if !st.IsSleep() {
				h.Steps[st.Name] = noop
			}
		}
		wf, err := e.Register(s.spec, h)
		if err != nil {
			return nil, fmt.Errorf("registering %s: %w", s.label, err)
		}
		wfs[s.spec.Name] = wf
	}
	return wfs, nil
}

// emptyInputs returns n empty run inputs.
func emptyInputs(n int) []json.RawMessage {
	in := make([]json.RawMessage, n)
	for i := range in {
		in[i] = json.RawMessage(`{}`)
	}
	return in
}

// insertChunk is how many runs one TriggerMany creates.
const insertChunk = 1000

// insertRuns creates n runs of wf in chunks with TriggerMany.
func insertRuns(ctx context.Context, wf *runtime.Workflow, n int, opts ...runtime.RunOption) error {
	for n > 0 {
		c := min(n, insertChunk)
		if _, err := wf.TriggerMany(ctx, emptyInputs(c), opts...); err != nil {
			return fmt.Errorf("inserting runs of %s: %w", wf.Name(), err)
		}
		n -= c
	}
	return nil
}
