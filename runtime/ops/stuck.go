package ops

import (
	"context"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

// StuckRun is a running run that has made no progress for longer than the
// engine's StuckAfter, with the steps holding it up.
type StuckRun struct {
	ID       runtime.RunID `json:"id"`
	Workflow string        `json:"workflow"`
	Tenant   string        `json:"tenant"`
	Steps    []StuckStep   `json:"steps"`
}

// StuckStep is a step making no progress.
type StuckStep struct {
	Step   string             `json:"step"`
	Status runtime.TaskStatus `json:"status"`
	// Worker holds a RUNNING step.
	Worker string `json:"worker,omitempty"`
	// Since is when the step was claimed (RUNNING), queued (QUEUED), or
	// its timer was due (SLEEPING, RETRYING).
	Since time.Time `json:"since"`
}

// Stuck lists up to 100 runs that have made no progress for longer than
// the engine's StuckAfter, oldest first (see runtime.Engine.StuckRuns, the
// check the leader logs): a step claimed and still running past its
// timeout, queued and never claimed, or waiting on a timer that should
// have fired. It reads only live work.
func (a *Admin) Stuck(ctx context.Context) ([]StuckRun, error) {
	runs, err := a.engine.StuckRuns(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]StuckRun, len(runs))
	for i, r := range runs {
		out[i] = StuckRun{ID: r.ID, Workflow: r.Workflow, Tenant: r.Tenant, Steps: make([]StuckStep, len(r.Tasks))}
		for j, t := range r.Tasks {
			out[i].Steps[j] = StuckStep{Step: t.Step, Status: t.Status, Worker: t.Worker, Since: t.Since.UTC()}
		}
	}
	return out, nil
}
