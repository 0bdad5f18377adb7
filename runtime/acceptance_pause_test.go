package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Pausing a workflow, end to end through generated clients, on each
// store: see Engine.PauseWorkflow.

func TestPauseMemory(t *testing.T) {
	runPause(t, memoryHarness)
}

func TestPausePostgres(t *testing.T) {
	runPause(t, postgresHarness)
}

func runPause(t *testing.T, newH newHarness) {
	t.Run("HoldsEverythingUntilResume", func(t *testing.T) { testPauseHolds(t, newH) })
	t.Run("RunningStepFinishes", func(t *testing.T) { testPauseRunningStep(t, newH) })
	t.Run("OneTenant", func(t *testing.T) { testPauseTenant(t, newH) })
}

// testPauseHolds pauses a workflow whose run sleeps: its timers still
// fire, but the steps after them wait, and so does a run triggered while
// paused; another workflow goes on. The resume completes everything.
func testPauseHolds(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	sleeps := &sleepSteps{}
	client, err := wf.RegisterSleeps(h.Engine, sleeps)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := wf.RegisterChain(h.Engine, &chainSteps{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := client.RunNoWait(ctx, wf.SleepsInput{})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle() // start ran; the sleeps sleep
	if made, err := client.Pause(ctx); err != nil || len(made) != 1 || made[0].Tenant != "" {
		t.Fatalf("Pause() = %+v, %v; want the pause of every tenant", made, err)
	}

	// A trigger is accepted: the run exists, its first step queued.
	second, err := client.RunNoWait(ctx, wf.SleepsInput{})
	if err != nil {
		t.Fatalf("triggering a paused workflow: %v", err)
	}
	// Another workflow runs as ever.
	if res, err := chain.Run(ctx, wf.ChainInput{Start: 1}); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("chain while sleeps is paused: %v, %v", res.Status, err)
	}

	h.Advance(25 * time.Hour)
	st := h.Steps(first.ID)
	for step, want := range map[string]runtime.TaskStatus{
		// Sleep steps complete when their timers fire, with no claim...
		"day": store.TaskCompleted, "short": store.TaskCompleted, "long": store.TaskCompleted,
		// ... and the steps after them wait.
		"after-both": store.TaskQueued, "after-day": store.TaskQueued,
	} {
		if st[step] != want {
			t.Errorf("first run's %s is %s while paused, want %s", step, st[step], want)
		}
	}
	if got := h.Steps(second.ID)["start"]; got != store.TaskQueued {
		t.Errorf("second run's start is %s while paused, want QUEUED", got)
	}
	if n := sleeps.calls.count("start"); n != 1 {
		t.Errorf("start ran %d times while paused, want once (before the pause)", n)
	}
	pauses, err := h.Engine.PausedWorkflows(ctx)
	if err != nil || len(pauses) != 1 || pauses[0].Workflow != "sleeps" || pauses[0].Queued != 3 {
		t.Errorf("PausedWorkflows = %+v, %v; want sleeps holding 3 tasks", pauses, err)
	}

	if lifted, err := client.Resume(ctx); err != nil || len(lifted) != 1 {
		t.Fatalf("Resume() = %+v, %v; want the pause lifted", lifted, err)
	}
	h.Settle()
	for _, id := range []runtime.RunID{first.ID, second.ID} {
		if res, err := client.Wait(ctx, id); err != nil || res.Status != runtime.RunCompleted {
			t.Errorf("run %s after the resume: %v, %v", id, res.Status, err)
		}
	}
	if pauses, err := h.Engine.PausedWorkflows(ctx); err != nil || len(pauses) != 0 {
		t.Errorf("PausedWorkflows after the resume = %+v, %v; want none", pauses, err)
	}
}

// pausingChain pauses its own workflow from its first step: the step
// finishes and is recorded, the next waits.
type pausingChain struct {
	chainSteps
	pause func(context.Context) error
}

func (s *pausingChain) First(ctx context.Context, in wf.ChainInput) (wf.ChainFirstOutput, error) {
	if err := s.pause(ctx); err != nil {
		return wf.ChainFirstOutput{}, err
	}
	return s.chainSteps.First(ctx, in)
}

func testPauseRunningStep(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	steps := &pausingChain{}
	client, err := wf.RegisterChain(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	steps.pause = func(ctx context.Context) error { _, err := client.Pause(ctx); return err }
	ref, err := client.RunNoWait(ctx, wf.ChainInput{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if got := h.Steps(ref.ID); got["first"] != store.TaskCompleted || got["second"] != store.TaskQueued {
		t.Fatalf("steps after pausing from first: %v; want first COMPLETED, second QUEUED", got)
	}
	if _, err := client.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	steps.pause = func(context.Context) error { return nil }
	h.Settle()
	res, err := client.Wait(ctx, ref.ID)
	if err != nil || res.Status != runtime.RunCompleted || res.Third == nil || res.Third.Value != 4 {
		t.Fatalf("after the resume: %+v, %v; want COMPLETED with third = 4", res, err)
	}
}

// testPauseTenant pauses a workflow for one tenant: the others' runs go
// on.
func testPauseTenant(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	client, err := wf.RegisterChain(h.Engine, &chainSteps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.PauseWorkflow(ctx, "chain", "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.PauseWorkflow(ctx, "chain", ""); err == nil {
		t.Error(`PauseWorkflow(chain, "") worked, want an error (no tenant pauses every tenant)`)
	}
	acme, err := client.RunNoWait(ctx, wf.ChainInput{Start: 1}, runtime.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.RunNoWait(ctx, wf.ChainInput{Start: 1}, runtime.WithTenant("beta"))
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if res, err := client.Wait(ctx, other.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Errorf("beta's run while acme is paused: %v, %v; want COMPLETED", res.Status, err)
	}
	if got := h.Steps(acme.ID)["first"]; got != store.TaskQueued {
		t.Errorf("acme's first step is %s, want QUEUED", got)
	}
	if _, err := h.Engine.ResumeWorkflow(ctx, "chain", "acme"); err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if res, err := client.Wait(ctx, acme.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Errorf("acme's run after the resume: %v, %v; want COMPLETED", res.Status, err)
	}
}
