package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

func TestPriorityMemory(t *testing.T) {
	testPriority(t, func(t *testing.T, opts ...trellistest.Option) *trellistest.Harness {
		return trellistest.New(t, opts...)
	})
}

func TestPriorityPostgres(t *testing.T) {
	testPriority(t, func(t *testing.T, opts ...trellistest.Option) *trellistest.Harness {
		return trellistest.New(t, append(opts, trellistest.WithStore(pgstore.New(pgtest.Pool(t))))...)
	})
}

// triageSteps records "<step> <ticket>" as steps run.
type triageSteps struct{ calls calls }

func (s *triageSteps) Open(_ context.Context, in wf.TriageInput) error {
	s.calls.add("open " + in.Ticket)
	return nil
}

func (s *triageSteps) Handle(_ context.Context, in wf.TriageInput, _ wf.TriageHandleParents) error {
	s.calls.add("handle " + in.Ticket)
	return nil
}

func testPriority(t *testing.T, newH func(*testing.T, ...trellistest.Option) *trellistest.Harness) {
	t.Run("OrderOfOneWorker", func(t *testing.T) {
		// One step at a time, so that steps run in claim order.
		h := newH(t, trellistest.WithConfig(func(c *runtime.Config) { c.Concurrency = 1 }))
		steps := &triageSteps{}
		client, err := wf.RegisterTriage(h.Engine, steps)
		if err != nil {
			t.Fatal(err)
		}
		trigger := func(ticket string, severity wf.TriageInputSeverity, opts ...runtime.RunOption) runtime.RunID {
			t.Helper()
			ref, err := client.RunNoWait(t.Context(), wf.TriageInput{Ticket: ticket, Severity: severity}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return ref.ID
		}
		// The workflow's priority field maps severity to priority; a
		// trigger's WithPriority overrides it.
		trigger("low-1", wf.TriageInputSeverityLow)
		trigger("normal-1", wf.TriageInputSeverityNormal)
		trigger("normal-2", wf.TriageInputSeverityNormal)
		urgent := trigger("urgent", wf.TriageInputSeverityUrgent)
		raised := trigger("raised", wf.TriageInputSeverityNormal, runtime.WithPriority(runtime.PriorityHigh))
		lowered := trigger("lowered", wf.TriageInputSeverityNormal, runtime.WithPriority(runtime.PriorityLow))
		h.RunUntilIdle()

		// Runs' first steps, all queued before any ran, go in rounds (see
		// runtime/store/priority.go): low-1, normal-1 and urgent share
		// the first round, urgent first; raised goes ahead of normal-2;
		// low-1 keeps its place in the first round; lowered, queued
		// behind the normal runs, comes last. (Second steps go ahead of
		// new runs, but when depends on when results are recorded.)
		want := []string{"open urgent", "open normal-1", "open low-1", "open raised", "open normal-2", "open lowered"}
		var opens []string
		for _, c := range steps.calls.list() {
			if strings.HasPrefix(c, "open ") {
				opens = append(opens, c)
			}
		}
		if diff := cmp.Diff(want, opens); diff != "" {
			t.Errorf("first steps ran (-want +got):\n%s", diff)
		}
		for id, want := range map[runtime.RunID]int{urgent: runtime.PriorityHigh, raised: runtime.PriorityHigh, lowered: runtime.PriorityLow} {
			res := h.Result(id)
			if res.Status != runtime.RunCompleted || res.Priority != want {
				t.Errorf("run %s: status %s, priority %d; want COMPLETED, priority %d", id, res.Status, res.Priority, want)
			}
		}
	})

	t.Run("InvalidPriorityRefused", func(t *testing.T) {
		h := newH(t)
		client, err := wf.RegisterTriage(h.Engine, &triageSteps{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.RunNoWait(t.Context(), wf.TriageInput{Ticket: "t", Severity: wf.TriageInputSeverityLow}, runtime.WithPriority(7))
		if err == nil || !strings.Contains(err.Error(), "WithPriority(7)") {
			t.Errorf("WithPriority(7) = %v, want an error naming it", err)
		}
	})

	t.Run("ExpressionOutOfRangeRefused", func(t *testing.T) {
		h := newH(t)
		spec := wf.TriageSpec()
		spec.Priority = "input.ticket.size()"
		w, err := h.Engine.Workflow(spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Trigger(t.Context(), []byte(`{"ticket":"abcdef","severity":"low"}`))
		var inputErr *runtime.InputError
		if err == nil || errors.As(err, &inputErr) || !strings.Contains(err.Error(), "is 6 for this input") {
			t.Errorf("trigger with priority 6 = %v, want an error saying so", err)
		}
	})
}
