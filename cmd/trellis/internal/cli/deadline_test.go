package cli

import (
	"context"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

type deadlineSteps struct{}

func (deadlineSteps) Work(context.Context, wf.DeadlinesInput) error { return nil }
func (deadlineSteps) Done(context.Context, wf.DeadlinesInput, wf.DeadlinesDoneParents) error {
	return nil
}
func (deadlineSteps) Alert(context.Context, wf.DeadlinesInput, runtime.Failure) error { return nil }

// runs list and show say when a delayed run starts, and a run's deadline,
// and what failed a run whose deadline passed.
func TestRunsShowDeadlinesAndDelayedStarts(t *testing.T) {
	e := newOpsEnv(t)
	client, err := wf.RegisterDeadlines(e.h.Engine, deadlineSteps{})
	if err != nil {
		t.Fatal(err)
	}
	quick := wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick}
	delayed, err := client.RunNoWait(t.Context(), quick, runtime.WithStartAfter(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	e.created(delayed.ID)
	e.h.Clock.Advance(time.Minute)
	expired, err := client.RunNoWait(t.Context(), quick, runtime.WithTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	e.created(expired.ID)
	e.h.Advance(20 * time.Minute)

	e.golden("runs-list-deadlines.txt", e.ok("runs", "list"))
	e.golden("runs-show-delayed.txt", e.ok("runs", "show", delayed.ID.String()))
	e.golden("runs-show-deadline.txt", e.ok("runs", "show", expired.ID.String()))
}
