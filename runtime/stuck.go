package runtime

import (
	"context"

	"github.com/effectivelabs/trellis/runtime/store"
)

// StuckRun is a running run that has made no progress for longer than
// Config.StuckAfter, with the tasks holding it up. Its JSON is what
// trellis runs stuck -format json prints.
type StuckRun struct {
	ID       RunID  `json:"id"`
	Workflow string `json:"workflow"`
	Tenant   string `json:"tenant"`
	// Tasks are the run's tasks making no progress, oldest first.
	Tasks []StuckTask `json:"steps"`
}

// StuckTask is a task making no progress: its step, status, worker (when
// RUNNING) and since when. It is the store's record (store.StuckTask),
// with Step named by Engine.StuckRuns.
type StuckTask = store.StuckTask

// maxStuckRuns bounds how many stuck runs one check reports.
const maxStuckRuns = 100

// StuckRuns lists up to 100 runs that have made no progress for longer
// than Config.StuckAfter, oldest first: a task claimed and still running
// (past its step's timeout too), queued and not claimed, or waiting on a
// timer that should have fired. Sleeping and retrying on schedule is
// progress. It reads only live work, so it is cheap on any history. Times
// are in UTC. It is the check the leader logs, what trellis runs stuck
// prints and what the dashboard's overview shows.
func (e *Engine) StuckRuns(ctx context.Context) ([]StuckRun, error) {
	if e.cfg.StuckAfter <= 0 {
		return nil, nil
	}
	now := e.clock.Now()
	tasks, err := e.store.StuckTasks(ctx, store.Stuck{Before: now.Add(-e.cfg.StuckAfter), Limit: 10 * maxStuckRuns})
	if err != nil {
		return nil, err
	}
	var out []StuckRun
	index := map[RunID]int{}
	for _, t := range tasks {
		def, err := e.definition(ctx, t.Version)
		if err != nil {
			def = nil // the step is named by its index
		}
		// A step still within its own timeout is working, not stuck.
		if def != nil && t.Key.Step < len(def.graph.Steps) {
			if s := &def.graph.Steps[t.Key.Step]; t.Status == store.TaskRunning && s.Timeout > 0 && now.Sub(t.Since) < s.Timeout {
				continue
			}
		}
		i, ok := index[t.Key.Run]
		if !ok {
			if len(out) == maxStuckRuns {
				continue
			}
			i = len(out)
			index[t.Key.Run] = i
			out = append(out, StuckRun{ID: t.Key.Run, Workflow: t.Workflow, Tenant: t.Tenant})
		}
		t.Step, t.Since = stepName(def, t.Key.Step), t.Since.UTC()
		out[i].Tasks = append(out[i].Tasks, t)
	}
	return out, nil
}
