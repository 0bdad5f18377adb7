package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// The test kit (trellistest, an engine driven by hand on a virtual clock)
// must behave as a started engine does, or what a user's tests prove is
// not what production does. Each scenario here runs against both, on each
// store, and asserts the same outcome.

// rig is an engine of either kind, as a scenario sees it.
type rig struct {
	engine *runtime.Engine
	// nap is a sleep long enough to outlast the steps around it: an hour
	// on the kit's virtual clock, a fraction of a second in real time.
	nap time.Duration
	// pass lets d pass on the engine's clock. Called from a goroutine of
	// the scenario's while a step blocks: the kit's clock moves by hand
	// (as a test moves it), a started engine's by itself.
	pass func(d time.Duration)
	// settle waits for the run to end, letting time pass as it needs:
	// the kit advances its clock by up to 24 hours, timer by timer, as a
	// test does; a started engine waits in real time.
	settle func(t *testing.T, w *runtime.Workflow, id runtime.RunID) (*runtime.RunResult, error)
}

func runAgreement(t *testing.T, scenario func(*testing.T, rig)) {
	stores := map[string]func(*testing.T) store.Store{
		"Memory":   func(*testing.T) store.Store { return memstore.New() },
		"Postgres": func(t *testing.T) store.Store { return pgstore.New(pgtest.Pool(t)) },
	}
	for _, storeName := range []string{"Memory", "Postgres"} {
		newStore := stores[storeName]
		t.Run("Kit"+storeName, func(t *testing.T) {
			h := trellistest.New(t, trellistest.WithStore(newStore(t)))
			scenario(t, rig{engine: h.Engine, nap: time.Hour, pass: h.Clock.Advance,
				settle: func(t *testing.T, w *runtime.Workflow, id runtime.RunID) (*runtime.RunResult, error) {
					h.Advance(24 * time.Hour)
					return w.Wait(agreementCtx(t), id)
				}})
		})
		t.Run("Started"+storeName, func(t *testing.T) {
			e := newEngine(t, newStore(t), "w")
			// Registering happens in the scenario; a started engine claims
			// for the workflows registered before Start, so start it lazily.
			scenario(t, rig{engine: e, nap: 300 * time.Millisecond, pass: func(time.Duration) {},
				settle: func(t *testing.T, w *runtime.Workflow, id runtime.RunID) (*runtime.RunResult, error) {
					return w.Wait(agreementCtx(t), id)
				}})
		})
	}
}

// startIfIdle starts a started-engine rig once its workflows are
// registered; the kit's engine is driven by Wait instead.
func startIfIdle(t *testing.T, r rig) {
	t.Helper()
	if r.nap < time.Hour {
		start(t, r.engine)
	}
}

// blocker is a step that blocks until its context ends, and reports the
// cause.
func blocker(started chan<- struct{}, cause chan<- error) runtime.StepFunc {
	return func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

func agreementCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkCancelled checks that the blocked step saw its run end.
func checkCancelled(t *testing.T, cause <-chan error) {
	t.Helper()
	select {
	case err := <-cause:
		if err == nil || !strings.Contains(err.Error(), "the run ended") {
			t.Errorf("the blocked step's context ended with %v, want the run's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the blocked step never saw its context cancelled")
	}
}

// TestAgreementTimerFiresWhileAStepBlocks: while a step blocks, the clock
// moves past a sibling's sleep; the sleep ends, the step after it fails
// the run, and the blocked step is cancelled.
func TestAgreementTimerFiresWhileAStepBlocks(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "sleeper", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{
			{Name: "wait"},
			{Name: "nap", Sleep: r.nap},
			{Name: "fail", Parents: []string{"nap"}},
		}}
		started, cause := make(chan struct{}, 1), make(chan error, 1)
		w, err := r.engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"wait": blocker(started, cause),
			"fail": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
				return nil, runtime.NonRetryable(errors.New("after the nap"))
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		ref, err := w.Trigger(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-started
			r.pass(r.nap)
		}()
		res, err := w.Wait(agreementCtx(t), ref.ID)
		if !errors.Is(err, runtime.ErrRunFailed) || res == nil || res.Failure == nil || res.Failure.Step != "fail" {
			t.Fatalf("Wait = %+v, %v; want the run failed by step fail", res, err)
		}
		checkCancelled(t, cause)
	})
}

// TestAgreementMapItemCancelledWithItsSibling: one item of a map fails for
// good while another item's step blocks; the map's run fails, which ends
// the other item's run, and its step is cancelled.
func TestAgreementMapItemCancelledWithItsSibling(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "items", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{
			{Name: "each", ForEach: &runtime.ForEachSpec{Items: "[1, 2]", ItemSchema: `{"type":"integer"}`}},
		}}
		started, cause := make(chan struct{}, 1), make(chan error, 1)
		block := blocker(started, cause)
		w, err := r.engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"each": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
				if string(req.Input) == "2" {
					return block(ctx, req)
				}
				select { // item 1 fails once item 2 is in its step
				case <-started:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return nil, runtime.NonRetryable(errors.New("item 1 fails"))
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		res, err := w.Run(agreementCtx(t), nil)
		if !errors.Is(err, runtime.ErrRunFailed) || res == nil {
			t.Fatalf("Run = %+v, %v; want the run failed", res, err)
		}
		checkCancelled(t, cause)
	})
}

// TestAgreementChildRunCancelledWithItsParent: a child workflow's step
// blocks; cancelling the parent run ends the child run, and its step is
// cancelled.
func TestAgreementChildRunCancelledWithItsParent(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		child := &runtime.WorkflowSpec{Name: "kid", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "work"}}}
		parent := &runtime.WorkflowSpec{Name: "parent", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{
			{Name: "spawn", Workflow: &runtime.ChildWorkflowSpec{Name: "kid"}},
		}}
		started, cause := make(chan struct{}, 1), make(chan error, 1)
		if _, err := r.engine.Register(child, runtime.Handlers{Steps: map[string]runtime.StepFunc{"work": blocker(started, cause)}}); err != nil {
			t.Fatal(err)
		}
		w, err := r.engine.Register(parent, runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"spawn": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
				return json.RawMessage(`{}`), nil
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		ref, err := w.Trigger(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-started
			if _, err := r.engine.CancelRun(context.WithoutCancel(t.Context()), ref.ID); err != nil {
				t.Errorf("CancelRun: %v", err)
			}
		}()
		res, err := w.Wait(agreementCtx(t), ref.ID)
		if !errors.Is(err, runtime.ErrRunCancelled) || res == nil {
			t.Fatalf("Wait = %+v, %v; want the run cancelled", res, err)
		}
		checkCancelled(t, cause)
	})
}

// eventsOf lists a run's events as "step TYPE attempt", in order.
func eventsOf(t *testing.T, e *runtime.Engine, id runtime.RunID, step string) []string {
	t.Helper()
	events, err := e.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		if ev.Step == step {
			out = append(out, fmt.Sprintf("%s %d", ev.Type, ev.Attempt))
		}
	}
	return out
}

// TestAgreementRetriesWithBackoff: a step that fails twice is retried
// after its backoff, each attempt a number of its own, and completes on
// the third; the event log says so.
func TestAgreementRetriesWithBackoff(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "flaky", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "call",
			Retry: runtime.RetryPolicy{MaxRetries: 2, InitialDelay: r.nap / 4, BackoffFactor: 2, MaxDelay: r.nap}}}}
		var mu sync.Mutex
		var seen []string
		w, err := r.engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"call": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%d/%d", req.Info.Attempt, req.Info.Retries))
				mu.Unlock()
				if req.Info.Retries < 2 {
					return nil, errors.New("not yet")
				}
				return json.RawMessage(`{"ok":true}`), nil
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		ref, err := w.Trigger(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.settle(t, w, ref.ID)
		if err != nil || res.Status != runtime.RunCompleted || string(res.Outputs["call"]) != `{"ok":true}` {
			t.Fatalf("run = %+v, %v; want it completed by the third attempt", res, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(seen, " "); got != "1/0 2/1 3/2" {
			t.Errorf("attempts/retries seen = %s, want 1/0 2/1 3/2", got)
		}
		want := "QUEUED 0,STARTED 1,RETRYING 1,QUEUED 1,STARTED 2,RETRYING 2,QUEUED 2,STARTED 3,COMPLETED 3"
		if got := strings.Join(eventsOf(t, r.engine, ref.ID, "call"), ","); got != want {
			t.Errorf("call's events:\n got %s\nwant %s", got, want)
		}
	})
}

// TestAgreementSkipsCascadeAndBranchesMerge: a skipped step's only child
// is skipped with it; a child with a completed parent as well runs.
func TestAgreementSkipsCascadeAndBranchesMerge(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "branches", InputSchema: `{"type":"object","properties":{"express":{"type":"boolean"}}}`,
			Steps: []runtime.StepSpec{
				{Name: "start"},
				{Name: "express", Parents: []string{"start"}, SkipIf: []string{"!input.express"}},
				{Name: "label", Parents: []string{"express"}},
				{Name: "ship", Parents: []string{"start", "express"}},
			}}
		var ran sync.Map
		code := func(name string) runtime.StepFunc {
			return func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
				ran.Store(name, true)
				return nil, nil
			}
		}
		w, err := r.engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"start": code("start"), "express": code("express"), "label": code("label"), "ship": code("ship"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		ref, err := w.Trigger(t.Context(), json.RawMessage(`{"express":false}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.settle(t, w, ref.ID)
		if err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run = %+v, %v", res, err)
		}
		want := map[string]runtime.TaskStatus{"start": runtime.TaskCompleted, "express": runtime.TaskSkipped,
			"label": runtime.TaskSkipped, "ship": runtime.TaskCompleted}
		for step, status := range want {
			if res.Steps[step] != status {
				t.Errorf("%s: %s, want %s", step, res.Steps[step], status)
			}
			if _, did := ran.Load(step); did != (status == runtime.TaskCompleted) {
				t.Errorf("%s ran: %v, want %v", step, did, status == runtime.TaskCompleted)
			}
		}
	})
}

// TestAgreementFailureHandlerRunsOnce: a step that fails for good fails
// the run, cancels the steps not started, and the failure handler runs
// exactly once with the failed step and its error; the result handed out
// is final.
func TestAgreementFailureHandlerRunsOnce(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "handled", InputSchema: `{"type":"object"}`,
			Steps: []runtime.StepSpec{{Name: "validate"}, {Name: "charge", Parents: []string{"validate"}},
				{Name: "ship", Parents: []string{"charge"}}},
			OnFailure: &runtime.OnFailureSpec{Name: "alert"}}
		var calls atomic.Int32
		var got runtime.Failure
		w, err := r.engine.Register(spec, runtime.Handlers{
			Steps: map[string]runtime.StepFunc{
				"charge": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
					return nil, runtime.NonRetryable(errors.New("card declined"))
				},
				"validate": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
				"ship":     func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
			},
			OnFailure: func(_ context.Context, req *runtime.FailureRequest) error {
				calls.Add(1)
				got = req.Failure
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		res, err := w.Run(agreementCtx(t), nil)
		if !errors.Is(err, runtime.ErrRunFailed) || res == nil {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if res.Steps["ship"] != runtime.TaskCancelled || res.Steps["alert"] != runtime.TaskCompleted || !res.Final() {
			t.Errorf("steps = %v (final %v), want ship CANCELLED and alert COMPLETED", res.Steps, res.Final())
		}
		if n := calls.Load(); n != 1 || got.Step != "charge" || got.StepIndex != 1 || !strings.Contains(got.Error, "card declined") {
			t.Errorf("handler ran %d times with %+v, want once with charge's (step 1) error", n, got)
		}
		if res.Failure == nil || *res.Failure != got {
			t.Errorf("the run's failure is %+v, the handler's %+v: want the same", res.Failure, got)
		}
	})
}

// TestAgreementSleepEndsOnTime: a sleep holds nothing while it waits and
// ends when its time has passed; the event log never shows it shorter.
func TestAgreementSleepEndsOnTime(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "napper", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{
			{Name: "nap", Sleep: r.nap}, {Name: "after", Parents: []string{"nap"}},
		}}
		w, err := r.engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"after": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
		}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		ref, err := w.Trigger(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.settle(t, w, ref.ID)
		if err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run = %+v, %v", res, err)
		}
		events, err := r.engine.Events(t.Context(), ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		var slept, woke time.Time
		for _, ev := range events {
			switch {
			case ev.Step == "nap" && ev.Type == runtime.EventSleeping:
				slept = ev.At
			case ev.Step == "nap" && ev.Type == runtime.EventWoken:
				woke = ev.At
			}
		}
		if slept.IsZero() || woke.Sub(slept) < r.nap {
			t.Errorf("the nap slept from %v to %v, want at least %v", slept, woke, r.nap)
		}
	})
}

// TestAgreementStepTimeout: a step that outlives its timeout has its
// context cancelled, the attempt counts as TIMED_OUT, and with no retries
// left the run fails.
func TestAgreementStepTimeout(t *testing.T) {
	runAgreement(t, func(t *testing.T, r rig) {
		spec := &runtime.WorkflowSpec{Name: "slow", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{
			{Name: "call", Timeout: r.nap / 2},
		}}
		started, cause := make(chan struct{}, 1), make(chan error, 1)
		w, err := r.engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{"call": blocker(started, cause)}})
		if err != nil {
			t.Fatal(err)
		}
		startIfIdle(t, r)
		ref, err := w.Trigger(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-started
			r.pass(r.nap)
		}()
		res, err := w.Wait(agreementCtx(t), ref.ID)
		if !errors.Is(err, runtime.ErrRunFailed) || res == nil {
			t.Fatalf("Wait = %+v, %v; want the run failed", res, err)
		}
		select {
		case err := <-cause:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the step's context ended with %v, want its deadline", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the step never saw its timeout")
		}
		if got := strings.Join(eventsOf(t, r.engine, ref.ID, "call"), ","); !strings.Contains(got, "TIMED_OUT 1") {
			t.Errorf("call's events = %s, want TIMED_OUT", got)
		}
	})
}
