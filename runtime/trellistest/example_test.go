package trellistest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// exampleT stands in for the *testing.T a test passes to New.
type exampleT struct{}

func (exampleT) Helper()                           {}
func (exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (exampleT) Context() context.Context          { return context.Background() }

// The harness runs an engine on the memory store and a virtual clock,
// driven by the test: a run goes as far as it can now, and a 24-hour
// sleep passes when the test advances the clock. In a test, pass t:
// h := trellistest.New(t), and register workflows with the generated
// Register<Workflow>(h.Engine, steps).
func ExampleNew() {
	ctx := context.Background()
	h := trellistest.New(exampleT{})
	orders, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name:        "orders",
		InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{
			{Name: "charge"},
			{Name: "fraud-window", Parents: []string{"charge"}, Sleep: 24 * time.Hour},
			{Name: "ship", Parents: []string{"fraud-window"}},
		},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
		"ship":   func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
	}})
	if err != nil {
		panic(err)
	}

	ref, err := orders.Trigger(ctx, json.RawMessage(`{}`))
	if err != nil {
		panic(err)
	}
	h.RunUntilIdle() // charge runs; the fraud window starts
	fmt.Println(h.Steps(ref.ID)["fraud-window"], h.Steps(ref.ID)["ship"])

	h.Advance(24 * time.Hour) // the window passes at once; ship runs
	fmt.Println(h.Result(ref.ID).Status, h.Trail(ref.ID, "fraud-window"), h.Times(ref.ID, "ship", runtime.EventStarted))
	// Output:
	// SLEEPING PENDING
	// COMPLETED [QUEUED SLEEPING WOKEN COMPLETED] [24h0m0s]
}
