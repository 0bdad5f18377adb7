package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// The property: whatever happens to a run, and however much the clocks of
// the engines sharing a store disagree, each task's events never go back
// in time (QUEUED <= STARTED <= its terminal event), a task is queued no
// earlier than the parents that resolved it, and a sleep wakes no earlier
// than its wake time. Each seed builds a random workflow and drives runs
// of it through three engines whose clocks are up to ten minutes apart,
// with random failures, retries, sleeps, skips, cancellations and run
// retries.

func TestEventTimesPropertyMemory(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { checkEventTimes(t, memstore.New(), seed) })
	}
}

func TestEventTimesPropertyPostgres(t *testing.T) {
	s := pgstore.New(pgtest.Pool(t))
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { checkEventTimes(t, s, seed) })
	}
}

// randomSpec builds a workflow of 2-7 steps: each may have up to two
// earlier steps as parents, be a sleep, have a condition, and retry.
func randomSpec(r *rand.Rand, name string) *runtime.WorkflowSpec {
	spec := &runtime.WorkflowSpec{Name: name, InputSchema: `{"type":"object","properties":{"x":{"type":"integer"}}}`}
	n := 2 + r.IntN(6)
	for i := range n {
		s := runtime.StepSpec{Name: fmt.Sprintf("s%d", i), Retry: runtime.DefaultRetryPolicy()}
		for p := range i {
			if r.IntN(3) == 0 && len(s.Parents) < 2 {
				s.Parents = append(s.Parents, fmt.Sprintf("s%d", p))
			}
		}
		if r.IntN(4) == 0 {
			s.SkipIf = []string{fmt.Sprintf("has(input.x) && input.x > %d", r.IntN(10))}
		}
		if r.IntN(5) == 0 {
			s.Sleep = time.Duration(1+r.IntN(3600)) * time.Second
		} else {
			s.Retry.MaxRetries = r.IntN(3)
			s.Retry.InitialDelay = time.Duration(1+r.IntN(60)) * time.Second
		}
		spec.Steps = append(spec.Steps, s)
	}
	if r.IntN(2) == 0 {
		spec.OnFailure = &runtime.OnFailureSpec{Name: "handler", Retry: runtime.DefaultRetryPolicy()}
	}
	return spec
}

// flip decides, the same way each time it is asked, whether an attempt
// fails: about one in four does, and one in three of those for good.
func flip(seed uint64, info runtime.StepInfo) error {
	h := fnv.New64a()
	fmt.Fprint(h, seed, info.RunID, info.Step, info.Attempt)
	switch v := h.Sum64() % 12; {
	case v == 0:
		return runtime.NonRetryable(errors.New("fails for good"))
	case v < 3:
		return errors.New("fails this time")
	}
	return nil
}

func checkEventTimes(t *testing.T, s store.Store, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x7e11))
	name := fmt.Sprintf("prop-%d-%d", seed, r.IntN(1<<20))
	spec := randomSpec(r, name)
	handlers := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
	for _, st := range spec.Steps {
		if !st.IsSleep() {
			handlers.Steps[st.Name] = func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
				return nil, flip(seed, req.Info)
			}
		}
	}
	if spec.OnFailure != nil {
		handlers.OnFailure = func(ctx context.Context, req *runtime.FailureRequest) error { return flip(seed, req.Info) }
	}
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type engine struct {
		e     *runtime.Engine
		d     *runtime.Driver
		w     *runtime.Workflow
		clock *clock.Virtual
	}
	var engines []engine
	for i := range 3 {
		vc := clock.NewVirtual(base.Add(time.Duration(r.IntN(1200)-600) * time.Second))
		e, err := runtime.New(runtime.Config{Store: s, Clock: vc, WorkerID: fmt.Sprintf("%s-e%d", name, i)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := runtime.NewDriver(e)
		if err != nil {
			t.Fatal(err)
		}
		w, err := e.Register(spec, handlers)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, engine{e, d, w, vc})
	}
	ctx := t.Context()
	var runs []runtime.RunID
	for range 8 {
		en := engines[r.IntN(len(engines))]
		ref, err := en.w.Trigger(ctx, json.RawMessage(fmt.Sprintf(`{"x":%d}`, r.IntN(12))))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, ref.ID)
	}
	advance := func(d time.Duration) {
		for _, en := range engines {
			en.clock.Advance(d)
		}
	}
	step := func(en engine) {
		if _, err := en.d.RunUntilIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 120 {
		en := engines[r.IntN(len(engines))]
		switch k := r.IntN(20); {
		case k < 12:
			step(en)
		case k < 17:
			advance(time.Duration(r.IntN(1800)) * time.Second)
		case k < 18:
			if _, err := en.e.CancelRun(ctx, runs[r.IntN(len(runs))]); err != nil {
				t.Fatal(err)
			}
		default:
			if err := en.e.RetryRun(ctx, runs[r.IntN(len(runs))]); err != nil && !errors.Is(err, runtime.ErrNotRetryable) {
				t.Fatal(err)
			}
		}
	}
	// Drain: every run ends once time moves on far enough.
	for range 200 {
		done := true
		for _, id := range runs {
			res, err := engines[0].e.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			done = done && res.Status.Terminal() && res.Steps["handler"] != store.TaskQueued && res.Steps["handler"] != store.TaskRunning && res.Steps["handler"] != store.TaskRetrying
		}
		if done {
			break
		}
		for _, en := range engines {
			step(en)
		}
		advance(time.Hour)
	}
	for _, id := range runs {
		res, err := engines[0].e.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Status.Terminal() {
			t.Errorf("run %s still %s after draining: %v", id, res.Status, res.Steps)
		}
		events, err := engines[0].e.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		checkRunEventTimes(t, spec, id, events)
	}
}

// checkRunEventTimes checks one run's event log against the property.
func checkRunEventTimes(t *testing.T, spec *runtime.WorkflowSpec, id runtime.RunID, events []runtime.Event) {
	t.Helper()
	parents := map[string][]string{}
	for _, s := range spec.Steps {
		parents[s.Name] = s.Parents
	}
	last := map[string]runtime.Event{}
	resolved := map[string]time.Time{}
	wakeAt := map[string]time.Time{}
	for _, e := range events {
		if prev, ok := last[e.Step]; ok && e.At.Before(prev.At) {
			t.Errorf("run %s step %s: %s at %v is earlier than the %s before it at %v", id, e.Step, e.Type, e.At, prev.Type, prev.At)
		}
		last[e.Step] = e
		switch e.Type {
		case store.EventCompleted, store.EventSkipped:
			resolved[e.Step] = e.At
		case store.EventQueued:
			for _, p := range parents[e.Step] {
				if at, ok := resolved[p]; ok && e.At.Before(at) {
					t.Errorf("run %s step %s queued at %v, before its parent %s resolved at %v", id, e.Step, e.At, p, at)
				}
			}
		case store.EventSleeping:
			until, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(e.Detail, "until "))
			if err != nil {
				t.Fatalf("SLEEPING detail %q: %v", e.Detail, err)
			}
			wakeAt[e.Step] = until
		case store.EventWoken:
			if until, ok := wakeAt[e.Step]; !ok || e.At.Before(until) {
				t.Errorf("run %s step %s woke at %v, before its wake time %v", id, e.Step, e.At, until)
			}
		}
	}
}
