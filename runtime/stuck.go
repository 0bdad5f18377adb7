package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// StuckRun is a running run that has made no progress for longer than
// Config.StuckAfter, with the tasks holding it up.
type StuckRun struct {
	ID       RunID
	Workflow string
	Tenant   string
	Tasks    []StuckTask
}

// StuckTask is a task making no progress.
type StuckTask struct {
	Step   string
	Status TaskStatus
	// Attempt is the store's attempt number of the task.
	Attempt int
	// Worker holds a RUNNING task.
	Worker string
	// Since is when the task was claimed (RUNNING), queued (QUEUED) or its
	// timer was due (SLEEPING, RETRYING).
	Since time.Time
}

// maxStuckRuns bounds how many stuck runs one check reports.
const maxStuckRuns = 100

// StuckRuns lists up to 100 runs that have made no progress for longer
// than Config.StuckAfter, oldest first: a task claimed and still running
// (past its step's timeout too), queued and not claimed, or waiting on a
// timer that should have fired. Sleeping and retrying on schedule is
// progress. It reads only live work, so it is cheap on any history.
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
		step := fmt.Sprintf("step %d", t.Key.Step)
		if err == nil && t.Key.Step < len(def.graph.Steps) {
			s := &def.graph.Steps[t.Key.Step]
			step = s.Name
			// A step still within its own timeout is working, not stuck.
			if t.Status == store.TaskRunning && s.Timeout > 0 && now.Sub(t.Since) < s.Timeout {
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
		out[i].Tasks = append(out[i].Tasks, StuckTask{Step: step, Status: t.Status, Attempt: t.Attempt, Worker: t.Worker, Since: t.Since})
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
			e.faults.failed("looking for stuck runs", err, now)
		}
		return
	}
	e.faults.ok("looking for stuck runs", now)
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
