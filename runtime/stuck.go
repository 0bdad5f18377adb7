package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// stuckWatch logs stuck runs for the leader: each run at most once per
// StuckAfter, so that a run that stays stuck is reminded of, not spammed.
type stuckWatch struct {
	next   time.Time
	logged map[RunID]time.Time
}

// stuckCheckInterval is how often the leader looks for stuck runs.
func (e *Engine) stuckCheckInterval() time.Duration {
	return min(max(e.cfg.StuckAfter/2, time.Second), time.Minute)
}

func (e *Engine) checkStuck(ctx context.Context, w *stuckWatch) {
	now := e.clock.Now()
	if e.cfg.StuckAfter <= 0 || now.Before(w.next) {
		return
	}
	w.next = now.Add(e.stuckCheckInterval())
	runs, err := e.StuckRuns(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.faults.Failed("looking for stuck runs", err, now)
		}
		return
	}
	e.faults.OK("looking for stuck runs", now)
	seen := make(map[RunID]time.Time, len(runs))
	for _, r := range runs {
		last, ok := w.logged[r.ID]
		if ok && now.Sub(last) < e.cfg.StuckAfter {
			seen[r.ID] = last
			continue
		}
		seen[r.ID] = now
		parts := make([]string, len(r.Tasks))
		for i, t := range r.Tasks {
			parts[i] = fmt.Sprintf("%s %s since %s", t.Step, t.Status, t.Since.UTC().Format(time.RFC3339))
			if t.Worker != "" {
				parts[i] += " on worker " + t.Worker
			}
		}
		e.log.Warn("run making no progress", LogKeyRunID, r.ID.String(), LogKeyWorkflow, r.Workflow, LogKeyTenant, r.Tenant,
			"for", now.Sub(r.Tasks[0].Since).Round(time.Second), "tasks", strings.Join(parts, "; "))
	}
	w.logged = seen
}
