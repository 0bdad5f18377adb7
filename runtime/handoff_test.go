package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

func TestHandOffsMemory(t *testing.T) { testHandOffs(t, memstore.New()) }

func TestHandOffsPostgres(t *testing.T) { testHandOffs(t, pgstore.New(pgtest.Pool(t))) }

// A run of a -> b1..b4 -> c goes on in its worker after its root is
// claimed: a's completion hands off all four children (the slot a held,
// and three free ones), and the last b's completion hands off c. With
// DisableHandOff, every task is claimed.
func testHandOffs(t *testing.T, s store.Store) {
	for _, disabled := range []bool{false, true} {
		tel := newTelemetry(t)
		h := trellistest.New(t, trellistest.WithStore(s), trellistest.WithConfig(func(c *runtime.Config) {
			tel.configure(c)
			c.Concurrency = 10
			c.DisableHandOff = disabled
		}))
		noop := func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}
		name := "fan"
		if disabled {
			name = "fan-claimed"
		}
		wf, err := h.Engine.Register(&runtime.WorkflowSpec{
			Name: name, InputSchema: `{"type":"object"}`,
			Steps: []runtime.StepSpec{
				{Name: "a"},
				{Name: "b1", Parents: []string{"a"}}, {Name: "b2", Parents: []string{"a"}},
				{Name: "b3", Parents: []string{"a"}}, {Name: "b4", Parents: []string{"a"}},
				{Name: "c", Parents: []string{"b1", "b2", "b3", "b4"}},
			},
		}, runtime.Handlers{Steps: map[string]runtime.StepFunc{"a": noop, "b1": noop, "b2": noop, "b3": noop, "b4": noop, "c": noop}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := wf.Run(t.Context(), json.RawMessage(`{}`))
		if err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		ms := tel.metrics(t)
		handed, claimed := int64(0), int64(0)
		if !disabled {
			handed = ms.sum(t, "trellis.task.handed_off")
		}
		if _, size := ms.histogram(t, "trellis.claim.size"); size > 0 {
			claimed = int64(size)
		}
		want := [2]int64{5, 1}
		if disabled {
			want = [2]int64{0, 6}
		}
		if handed != want[0] || claimed != want[1] {
			t.Errorf("DisableHandOff %v: %d tasks handed off and %d claimed, want %d and %d", disabled, handed, claimed, want[0], want[1])
		}
		for _, step := range []string{"a", "b1", "b2", "b3", "b4", "c"} {
			if got := h.Trail(res.ID, step); len(got) != 3 {
				t.Errorf("DisableHandOff %v: step %s's events %v, want QUEUED, STARTED, COMPLETED", disabled, step, got)
			}
		}
	}
}
