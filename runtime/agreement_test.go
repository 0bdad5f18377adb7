package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
			scenario(t, rig{engine: h.Engine, nap: time.Hour, pass: h.Clock.Advance})
		})
		t.Run("Started"+storeName, func(t *testing.T) {
			e := newEngine(t, newStore(t), "w")
			// Registering happens in the scenario; a started engine claims
			// for the workflows registered before Start, so start it lazily.
			scenario(t, rig{engine: e, nap: 300 * time.Millisecond, pass: func(time.Duration) {}})
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
