package ops

import (
	"context"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// stepReader turns a run's tasks into Steps, with what its workflow
// version says of them: names, and the event and timeout of a wait.
type stepReader struct {
	names []string
	spec  *runtime.WorkflowSpec // nil when the version cannot be loaded
}

func newStepReader(def *runtime.Definition) stepReader {
	if def == nil {
		return stepReader{}
	}
	spec := def.Spec()
	return stepReader{names: def.StepNames(), spec: &spec}
}

// step is task t as a Step, without its output and start time (which
// GetRun reads from the event log).
func (sr stepReader) step(t store.Task) Step {
	s := Step{
		Index: t.Key.Step, Name: stepName(sr.names, t.Key.Step), Kind: t.Kind.String(), Status: t.Status,
		Attempts: t.Attempt, FinishedAt: timeOrNil(t.FinishedAt), Error: t.Error,
	}
	var spec *runtime.StepSpec
	if sr.spec != nil && t.Key.Step >= 0 && t.Key.Step < len(sr.spec.Steps) {
		spec = &sr.spec.Steps[t.Key.Step]
	}
	if spec != nil && spec.WaitFor != nil {
		s.Event = spec.WaitFor.Event
	}
	switch t.Status {
	case runtime.TaskRunning:
		s.Worker = t.Worker
	case runtime.TaskSleeping, runtime.TaskRetrying:
		s.WakeAt = timeOrNil(t.WakeAt)
	case runtime.TaskWaiting:
		// The engine sets a wait's deadline its timeout after the task
		// went WAITING, which is the task's last change until it wakes.
		if timeout := waitTimeout(spec); timeout > 0 && !t.UpdatedAt.IsZero() {
			s.WakeAt = timeOrNil(t.UpdatedAt.Add(timeout))
		}
	}
	return s
}

// waitTimeout is how long a WAITING step of spec waits at most: a wait
// for an event its WaitFor.Timeout, a child workflow its Timeout; zero
// for no limit (a map step's timeout bounds each item instead).
func waitTimeout(spec *runtime.StepSpec) time.Duration {
	switch {
	case spec == nil:
		return 0
	case spec.WaitFor != nil:
		return spec.WaitFor.Timeout
	case spec.Workflow != nil:
		return spec.Timeout
	}
	return 0
}

// InProgress returns, for each RUNNING run of ids, its steps under way
// (queued, running, sleeping, retrying or waiting) in step order, as
// GetRun shows them but without start times and outputs: where the run
// is now, for a listing to show. It reads the runs' tasks in one read
// (store.GetRuns) whatever the number of runs; an unknown or ended run
// has no entry.
func (a *Admin) InProgress(ctx context.Context, ids []runtime.RunID) (map[runtime.RunID][]Step, error) {
	out := map[runtime.RunID][]Step{}
	if len(ids) == 0 {
		return out, nil
	}
	runs, err := a.store.GetRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	readers := map[string]stepReader{}
	for _, r := range runs {
		if r.Status != runtime.RunRunning {
			continue
		}
		sr, ok := readers[r.Version]
		if !ok {
			def, _ := a.engine.Definition(ctx, r.Version) // nil when the version cannot be loaded
			sr = newStepReader(def)
			readers[r.Version] = sr
		}
		var steps []Step
		for _, t := range r.Tasks {
			switch t.Status {
			case runtime.TaskQueued, runtime.TaskRunning, runtime.TaskSleeping, runtime.TaskRetrying, runtime.TaskWaiting:
				steps = append(steps, sr.step(t))
			}
		}
		out[r.ID] = steps
	}
	return out, nil
}

// MaxChildPreview is the most child runs ChildRuns returns of a parent.
const MaxChildPreview = 100

// ChildRuns is what a listing shows beneath a run of the runs its steps
// started (the items of its map steps, the runs of its child workflow
// steps): how many by status, and the first few.
type ChildRuns struct {
	// Counts counts them by status.
	Counts map[runtime.RunStatus]int `json:"counts"`
	// Total is how many there are.
	Total int `json:"total"`
	// First are the first of them, by step and index, as listings show
	// runs.
	First []Run `json:"first"`
}

// ChildRuns returns, for each run of parents whose steps started runs,
// its ChildRuns with the first `first` of them (at most
// MaxChildPreview). Its cost is a count of the child runs and a read of
// `first` of them per parent, however many there are: a page of a
// listing nests its runs' children with one call.
func (a *Admin) ChildRuns(ctx context.Context, parents []runtime.RunID, first int) (map[runtime.RunID]*ChildRuns, error) {
	out := map[runtime.RunID]*ChildRuns{}
	if len(parents) == 0 {
		return out, nil
	}
	previews, err := a.store.ChildRunPreviews(ctx, parents, min(max(first, 0), MaxChildPreview))
	if err != nil {
		return nil, err
	}
	names := map[string][]string{} // by version, for failed steps
	for _, p := range previews {
		c := &ChildRuns{Counts: map[runtime.RunStatus]int{}, Total: p.Total(), First: make([]Run, 0, len(p.First))}
		for st, n := range p.Counts {
			c.Counts[st] = n
		}
		for _, r := range p.First {
			if r.Status == runtime.RunFailed && r.Failure != nil {
				if _, ok := names[r.Version]; !ok {
					names[r.Version] = a.stepNames(ctx, r.Version)
				}
			}
			c.First = append(c.First, listed(r, names[r.Version]))
		}
		out[p.Parent] = c
	}
	return out, nil
}
