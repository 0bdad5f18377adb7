package executor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// TestStopRunStopsOnlyThatRunsSteps owns steps of two runs, one of them
// claimed twice (a newer attempt replacing an older one) and one released,
// and stops one run: exactly its running steps, not its failure handler,
// are cancelled, however ownership changed before.
func TestStopRunStopsOnlyThatRunsSteps(t *testing.T) {
	c := newClaims()
	runA, runB := uuid.New(), uuid.New()
	task := func(run uuid.UUID, step, attempt int) store.ClaimedTask {
		return store.ClaimedTask{Key: store.TaskKey{Run: run, Step: step}, Attempt: attempt}
	}
	cancelled := map[store.TaskKey]bool{}
	start := func(t store.ClaimedTask, handler bool) {
		c.started(t, handler, func(error) { cancelled[t.Key] = true })
	}
	a0, a1, a2, b0 := task(runA, 0, 1), task(runA, 1, 1), task(runA, 2, 1), task(runB, 0, 1)
	c.end(c.begin(time.Time{}), []store.ClaimedTask{a0, a1, a2, b0})
	c.end(c.begin(time.Time{}), []store.ClaimedTask{task(runA, 0, 2)}) // a newer attempt of a0
	start(task(runA, 0, 2), false)
	start(a1, true) // the failure handler
	start(b0, false)
	c.release(store.Attempt{Key: a2.Key, Attempt: 1})

	c.stopRun(runA, errors.New("ended"))
	if !cancelled[a0.Key] || cancelled[a1.Key] || cancelled[b0.Key] {
		t.Fatalf("cancelled %v, want only run A's step 0", cancelled)
	}
	if c.runs[runA] != 2 || c.runs[runB] != 1 {
		t.Fatalf("claims by run = %v, want 2 of A and 1 of B", c.runs)
	}
	c.release(store.Attempt{Key: a0.Key, Attempt: 2}, store.Attempt{Key: a1.Key, Attempt: 1}, store.Attempt{Key: b0.Key, Attempt: 1})
	if len(c.runs) != 0 || len(c.byKey) != 0 {
		t.Fatalf("after releasing every claim: runs %v, claims %d", c.runs, len(c.byKey))
	}
	c.stopRun(runB, context.Canceled) // nothing owned: nothing happens
}

// TestRunsCodeOnlyWhileAStepRuns: the engine asks why a run ended (a read
// of the run) only when a step's code of it is running to be stopped, not
// for a claim whose code returned and whose result is being recorded, the
// usual case of the engine that finished the run, nor for its failure
// handler.
func TestRunsCodeOnlyWhileAStepRuns(t *testing.T) {
	c := newClaims()
	run := uuid.New()
	step := store.ClaimedTask{Key: store.TaskKey{Run: run, Step: 0}, Attempt: 1}
	handler := store.ClaimedTask{Key: store.TaskKey{Run: run, Step: 1}, Attempt: 1}
	c.end(c.begin(time.Time{}), []store.ClaimedTask{step, handler})
	if c.runsCode(run) {
		t.Fatal("runsCode before any code started")
	}
	c.started(handler, true, func(error) {})
	if c.runsCode(run) {
		t.Fatal("runsCode while only the failure handler runs")
	}
	c.started(step, false, func(error) {})
	if !c.runsCode(run) {
		t.Fatal("not runsCode while a step's code runs")
	}
	c.ended(step)
	if c.runsCode(run) {
		t.Fatal("runsCode after the step's code returned, its result not yet recorded")
	}
}
