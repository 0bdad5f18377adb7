package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// badGreetClient registers a greet whose hello step complete with an output that
// does not decode into GreetHelloOutput (its spec declares no output
// schema to refuse it), and whose shout step fails for good.
func badGreetClient(t *testing.T, e *runtime.Engine) *runtime.Client[GreetInput, GreetResult] {
	t.Helper()
	spec := &runtime.WorkflowSpec{
		Name:        "greet",
		InputSchema: `{"type":"object"}`,
		Steps:       []runtime.StepSpec{{Name: "hello"}, {Name: "shout", Parents: []string{"hello"}}},
	}
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"hello": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return json.RawMessage(`{"message":5}`), nil
		},
		"shout": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return nil, runtime.NonRetryable(errors.New("hoarse"))
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return runtime.NewClient[GreetInput](w, greetResult)
}

// A run that fails comes back with its result and the run's error; an
// output that does not decode is joined to that error, naming the step,
// and the rest of the result is still there.
func TestClientJoinsDecodeErrorsToTheRunsError(t *testing.T) {
	h := trellistest.New(t)
	greet := badGreetClient(t, h.Engine)
	res, err := greet.Run(t.Context(), GreetInput{Name: "Ada"})
	var failed *runtime.RunFailedError
	if !errors.As(err, &failed) || failed.Step != "shout" {
		t.Errorf("Run error = %v; want shout's *RunFailedError", err)
	}
	if err == nil || !strings.Contains(err.Error(), "decoding output of step hello") {
		t.Errorf("Run error = %v; want it to name hello's output, which does not decode", err)
	}
	if res.ID == (runtime.RunID{}) || res.Status != runtime.RunFailed || res.Shout != runtime.TaskFailed || res.Hello == nil {
		t.Errorf("Run result = %+v; want the failed run, hello's output partly decoded", res)
	}

	// Result reads the same run: the decoding error alone, not how it ended.
	now, err := greet.Result(t.Context(), res.ID)
	if errors.As(err, &failed) || err == nil || !strings.Contains(err.Error(), "step hello") {
		t.Errorf("Result error = %v; want only the decoding error", err)
	}
	if now.ID != res.ID || now.Status != runtime.RunFailed {
		t.Errorf("Result = %+v; want the failed run", now)
	}
}

// The run's own error comes back as it is when every output decodes, so
// that callers can compare it and type-assert it.
func TestClientReturnsTheRunsErrorAsItIs(t *testing.T) {
	h := trellistest.New(t)
	greet, err := newGreetClient(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := greet.RunNoWait(t.Context(), GreetInput{Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.CancelRun(t.Context(), ref.ID); err != nil {
		t.Fatal(err)
	}
	res, err := greet.Wait(t.Context(), ref.ID)
	if !errors.Is(err, runtime.ErrRunCancelled) || res.Status != runtime.RunCancelled || res.ID != ref.ID {
		t.Errorf("Wait = %+v, %v; want the cancelled run with ErrRunCancelled", res, err)
	}
	if _, ok := err.(interface{ Unwrap() []error }); ok {
		t.Errorf("Wait error = %#v; want the run's error, not a join", err)
	}
}

// An input or a payload that does not encode is refused before anything
// is written, naming the workflow or the event.
func TestClientRefusesWhatDoesNotEncode(t *testing.T) {
	h := trellistest.New(t)
	w, err := h.Engine.Register(greetSpec, greetHandlers)
	if err != nil {
		t.Fatal(err)
	}
	type bad struct{ C chan int }
	client := runtime.NewClient[bad](w, greetResult)
	ctx := t.Context()
	if _, err := client.Run(ctx, bad{}); err == nil || !strings.Contains(err.Error(), "encoding greet input") {
		t.Errorf("Run = %v; want an encoding error naming greet", err)
	}
	if _, err := client.RunNoWait(ctx, bad{}); err == nil || !strings.Contains(err.Error(), "encoding greet input") {
		t.Errorf("RunNoWait = %v; want an encoding error naming greet", err)
	}
	if _, err := client.RunManyNoWait(ctx, []bad{{}, {}}); err == nil || !strings.Contains(err.Error(), "encoding greet input 0") {
		t.Errorf("RunManyNoWait = %v; want an encoding error naming input 0", err)
	}
	if _, err := client.CreateSchedule(ctx, "daily", "@daily", bad{}); err == nil || !strings.Contains(err.Error(), "encoding greet input") {
		t.Errorf("CreateSchedule = %v; want an encoding error naming greet", err)
	}
	if err := runtime.SignalEvent(ctx, w, runtime.RunID{}, "poke", bad{}); err == nil || !strings.Contains(err.Error(), "encoding event poke") {
		t.Errorf("SignalEvent = %v; want an encoding error naming the event", err)
	}
	if _, err := runtime.SendEvent(ctx, w, "poke", "k", bad{}); err == nil || !strings.Contains(err.Error(), "encoding event poke") {
		t.Errorf("SendEvent = %v; want an encoding error naming the event", err)
	}
}

// WaitMany returns a result per id even when its context ends first: the
// runs that had not ended have only their ID.
func TestClientWaitManyKeepsTheIDsOfRunsThatDidNotEnd(t *testing.T) {
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	greet, err := newGreetClient(engine) // not started: no run ends
	if err != nil {
		t.Fatal(err)
	}
	refs, err := greet.RunManyNoWait(t.Context(), []GreetInput{{Name: "Ada"}, {Name: "Grace"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	results, err := greet.WaitMany(ctx, []runtime.RunID{refs[1].ID, refs[0].ID})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitMany error = %v; want the context's", err)
	}
	want := []GreetResult{{ID: refs[1].ID}, {ID: refs[0].ID}}
	if len(results) != 2 || results[0] != want[0] || results[1] != want[1] {
		t.Errorf("WaitMany = %+v; want %+v", results, want)
	}
}
