package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// greetSpec is what `trellis generate` embeds for a two-step workflow:
// hello, then shout unless the input says quiet.
var greetSpec = &runtime.WorkflowSpec{
	Name:        "greet",
	InputSchema: `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"quiet":{"type":"boolean"}}}`,
	Steps: []runtime.StepSpec{
		{Name: "hello", OutputSchema: `{"type":"object","properties":{"message":{"type":"string"}}}`},
		{Name: "shout", Parents: []string{"hello"}, SkipIf: []string{"input.quiet"}},
	},
}

var greetHandlers = runtime.Handlers{Steps: map[string]runtime.StepFunc{
	"hello": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
		var in struct{ Name string }
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"message": "hello " + in.Name})
	},
	"shout": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
}}

// A started engine runs workflows in the background; Run triggers a run
// and waits for its result. Generated clients wrap the same calls in
// types.
func Example() {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	greet, err := engine.Register(greetSpec, greetHandlers)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = engine.Stop(ctx) }() // on shutdown: finish running steps, hand over leadership

	res, err := greet.Run(ctx, json.RawMessage(`{"name":"Ada","quiet":true}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, string(res.Outputs["hello"]), res.Steps["shout"])
	// Output: COMPLETED {"message":"hello Ada"} SKIPPED
}

// A Driver runs an engine by hand on a virtual clock: nothing happens
// until it is told to, and time moves only when the test moves it. (The
// trellistest package does this for you.)
func ExampleDriver() {
	ctx := context.Background()
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: vc})
	if err != nil {
		panic(err)
	}
	driver, err := runtime.NewDriver(engine)
	if err != nil {
		panic(err)
	}
	nap := &runtime.WorkflowSpec{Name: "nap", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "sleep", Sleep: 24 * time.Hour}}}
	w, err := engine.Register(nap, runtime.Handlers{})
	if err != nil {
		panic(err)
	}
	ref, err := w.Trigger(ctx, json.RawMessage(`{}`))
	if err != nil {
		panic(err)
	}
	if _, err := driver.RunUntilIdle(ctx); err != nil {
		panic(err)
	}
	res, _ := engine.Result(ctx, ref.ID)
	fmt.Println("before:", res.Status)

	vc.Advance(24 * time.Hour)
	res, err = w.Wait(ctx, ref.ID) // with a driver, Wait runs what can run now
	fmt.Println("after a day:", res.Status, err)
	// Output:
	// before: RUNNING
	// after a day: COMPLETED <nil>
}

// TriggerMany starts a batch of runs in one transaction, and WaitMany
// waits for all of them: one result per run, in order, each saying how its
// run ended. Idempotency keys, one per input, make the batch safe to
// retry.
func ExampleEngine_WaitMany() {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	greet, err := engine.Register(greetSpec, greetHandlers)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = engine.Stop(ctx) }()

	inputs := []json.RawMessage{json.RawMessage(`{"name":"Ada"}`), json.RawMessage(`{"name":"Grace"}`)}
	keys := runtime.WithIdempotencyKeys("signup-ada", "signup-grace")
	refs, err := greet.TriggerMany(ctx, inputs, keys)
	if err != nil {
		panic(err)
	}
	again, err := greet.TriggerMany(ctx, inputs, keys) // a retry: the same runs
	if err != nil {
		panic(err)
	}
	fmt.Println("retry returned the first runs:", again[0].ID == refs[0].ID && again[1].Existing)

	results, err := engine.WaitMany(ctx, []runtime.RunID{refs[0].ID, refs[1].ID})
	if err != nil {
		panic(err)
	}
	for _, res := range results {
		fmt.Println(res.Status, string(res.Outputs["hello"]), res.Err())
	}
	// Output:
	// retry returned the first runs: true
	// COMPLETED {"message":"hello Ada"} <nil>
	// COMPLETED {"message":"hello Grace"} <nil>
}
