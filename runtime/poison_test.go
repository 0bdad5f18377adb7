package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// TestPoisonStaysWithItsRunPostgres: a run whose task the database cannot
// claim (its rate limit key is too long for the key's index, as a row
// written before keys were digested can be) fails with the database's
// reason, and the ordinary runs queued with it and after it all complete
// on one worker. Before, every claim that picked the task failed, and the
// worker completed nothing. (The memory store has no such limit.)
func TestPoisonStaysWithItsRunPostgres(t *testing.T) {
	pool := pgtest.Pool(t)
	s := pgstore.New(pool)
	tel := newTelemetry(t)
	e := newEngine(t, s, "w", tel.configure)
	spec := &runtime.WorkflowSpec{Name: "paced",
		InputSchema: `{"type":"object","required":["customerId"],"properties":{"customerId":{"type":"string"}}}`,
		Steps: []runtime.StepSpec{
			{Name: "charge", RateLimit: &runtime.RateLimitSpec{Key: "input.customerId", Limit: 100, Per: time.Second}},
			{Name: "notify", Parents: []string{"charge"}},
		}}
	ok := func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil }
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{"charge": ok, "notify": ok}})
	if err != nil {
		t.Fatal(err)
	}
	poison, err := w.Trigger(t.Context(), json.RawMessage(`{"customerId":"c-poison"}`))
	if err != nil {
		t.Fatal(err)
	}
	var key strings.Builder // random, so that Postgres cannot compress it under the limit
	for key.Len() < 8000 {
		key.WriteString(uuid.NewString())
	}
	if _, err := pool.Exec(t.Context(), `UPDATE trellis_tasks SET rate_key = $2 WHERE run_id = $1 AND step = 0`, poison.ID, key.String()); err != nil {
		t.Fatal(err)
	}
	var ordinary []runtime.RunID
	for i := range 20 {
		ref, err := w.Trigger(t.Context(), json.RawMessage(fmt.Sprintf(`{"customerId":"c-%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		ordinary = append(ordinary, ref.ID)
	}
	start(t, e)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	results, err := e.WaitMany(ctx, ordinary)
	if err != nil {
		t.Fatalf("the ordinary runs did not complete: %v", err)
	}
	for _, res := range results {
		if res.Status != runtime.RunCompleted {
			t.Errorf("run %s: %s, want COMPLETED", res.ID, res.Status)
		}
	}
	res, err := w.Wait(ctx, poison.ID)
	if !errors.Is(err, runtime.ErrRunFailed) || res.Failure == nil {
		t.Fatalf("poisoned run: %+v, %v; want it failed", res, err)
	}
	if !strings.Contains(res.Failure.Error, "could not claim the task") || !strings.Contains(res.Failure.Error, "54000") {
		t.Errorf("the poisoned run failed with %q, want the store's reason", res.Failure.Error)
	}
	ms := tel.metrics(t)
	if got := ms.sum(t, "trellis.task.quarantined"); got != 1 {
		t.Errorf("tasks quarantined: %d, want 1", got)
	}
	if got := ms.sum(t, "trellis.task.finished", "trellis.task.outcome=failed"); got != 1 {
		t.Errorf("tasks finished as failed: %d, want 1, the quarantined one", got)
	}
}
