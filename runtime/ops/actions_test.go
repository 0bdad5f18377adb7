package ops_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// TestActInBatches retries and cancels runs in every state, some given
// twice, over several batches: each id gets the outcome of its own run,
// in the order given.
func TestActInBatches(t *testing.T) {
	defer ops.SetActBatch(2)()
	stores(t, func(t *testing.T, h *trellistest.Harness) {
		ctx := t.Context()
		client, err := wf.RegisterChain(h.Engine, chain{})
		if err != nil {
			t.Fatal(err)
		}
		admin := ops.New(h.Engine)
		run := func(start int64) uuid.UUID {
			res, _ := client.Run(ctx, wf.ChainInput{Start: start})
			return res.ID
		}
		failed1, done, failed2, failed3 := run(-1), run(0), run(-2), run(-3)
		unknown := uuid.New()
		ids := []uuid.UUID{failed1, done, unknown, failed2, failed1, failed3, done}

		want := []ops.ActionResult{
			{Run: failed1, Outcome: ops.Retried},
			{Run: done, Outcome: ops.NotRetryable, Status: runtime.RunCompleted},
			{Run: unknown, Outcome: ops.NotFound},
			{Run: failed2, Outcome: ops.Retried},
			{Run: failed1, Outcome: ops.NotRetryable, Status: runtime.RunRunning},
			{Run: failed3, Outcome: ops.Retried},
			{Run: done, Outcome: ops.NotRetryable, Status: runtime.RunCompleted},
		}
		if diff := cmp.Diff(want, admin.Retry(ctx, ids...)); diff != "" {
			t.Errorf("Retry (-want +got):\n%s", diff)
		}
		want = []ops.ActionResult{
			{Run: failed1, Outcome: ops.Cancelled},
			{Run: done, Outcome: ops.AlreadyEnded, Status: runtime.RunCompleted},
			{Run: unknown, Outcome: ops.NotFound},
			{Run: failed2, Outcome: ops.Cancelled},
			{Run: failed1, Outcome: ops.AlreadyEnded, Status: runtime.RunCancelled},
			{Run: failed3, Outcome: ops.Cancelled},
			{Run: done, Outcome: ops.AlreadyEnded, Status: runtime.RunCompleted},
		}
		if diff := cmp.Diff(want, admin.Cancel(ctx, ids...)); diff != "" {
			t.Errorf("Cancel (-want +got):\n%s", diff)
		}
		// Retried again, the runs run to their failure once more.
		if got := admin.Retry(ctx, failed1, failed2, failed3); len(got) != 3 || got[2].Outcome != ops.Retried {
			t.Fatalf("Retry = %+v", got)
		}
		for _, id := range []uuid.UUID{failed1, failed2, failed3} {
			if res, _ := client.Wait(ctx, id); res.Status != runtime.RunFailed {
				t.Errorf("run %s after retry = %s; want FAILED", id, res.Status)
			}
		}
		if got := admin.Cancel(ctx); len(got) != 0 {
			t.Errorf("Cancel() = %+v", got)
		}
	})
}

// TestRerun reruns runs in every state, over several batches: finished
// runs run again from the step given, a running one is left as it is, and
// a step the workflow lacks is named in each run's result, with a guess.
func TestRerun(t *testing.T) {
	defer ops.SetActBatch(2)()
	stores(t, func(t *testing.T, h *trellistest.Harness) {
		ctx := t.Context()
		client, err := wf.RegisterChain(h.Engine, chain{})
		if err != nil {
			t.Fatal(err)
		}
		admin := ops.New(h.Engine)
		run := func(start int64) uuid.UUID {
			res, _ := client.Run(ctx, wf.ChainInput{Start: start})
			return res.ID
		}
		failed, done := run(-1), run(0)
		running, err := client.RunNoWait(ctx, wf.ChainInput{Start: 2})
		if err != nil {
			t.Fatal(err)
		}
		stopped, err := client.RunNoWait(ctx, wf.ChainInput{Start: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Engine.CancelRun(ctx, stopped.ID); err != nil {
			t.Fatal(err)
		}
		cancelled := stopped.ID
		unknown := uuid.New()

		want := []ops.ActionResult{
			{Run: done, Outcome: ops.NotRerunnable, Status: runtime.RunCompleted,
				Error: `workflow chain has no step "secnd" to rerun from; did you mean "second"?`},
			{Run: failed, Outcome: ops.NotRerunnable, Status: runtime.RunFailed,
				Error: `workflow chain has no step "secnd" to rerun from; did you mean "second"?`},
		}
		if diff := cmp.Diff(want, admin.Rerun(ctx, "secnd", done, failed)); diff != "" {
			t.Errorf("Rerun from a misspelt step (-want +got):\n%s", diff)
		}
		want = []ops.ActionResult{
			{Run: failed, Outcome: ops.Rerun},
			{Run: done, Outcome: ops.Rerun},
			{Run: running.ID, Outcome: ops.NotRerunnable, Status: runtime.RunRunning},
			{Run: unknown, Outcome: ops.NotFound},
			{Run: cancelled, Outcome: ops.Rerun},
		}
		if diff := cmp.Diff(want, admin.Rerun(ctx, "second", failed, done, running.ID, unknown, cancelled)); diff != "" {
			t.Errorf("Rerun (-want +got):\n%s", diff)
		}
		for id, st := range map[uuid.UUID]runtime.RunStatus{failed: runtime.RunFailed, done: runtime.RunCompleted, cancelled: runtime.RunCompleted} {
			if res, _ := client.Wait(ctx, id); res.Status != st {
				t.Errorf("run %s after the rerun = %s; want %s", id, res.Status, st)
			}
		}
	})
}
