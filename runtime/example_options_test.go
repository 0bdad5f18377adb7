package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// startGreet returns a started engine on the memory store with the greet
// workflow registered, and a function that stops it.
func startGreet(ctx context.Context) (*runtime.Engine, *runtime.Workflow, func()) {
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
	return engine, greet, func() { _ = engine.Stop(ctx) }
}

// New makes an engine; Register gives it a workflow's spec (what
// trellis generate embeds) and the code of its steps; Run triggers a
// run and waits for its result. The memory store keeps the runs as long
// as the process lives: for tests and single processes.
func ExampleNew() {
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

	res, err := greet.Run(ctx, json.RawMessage(`{"name":"Ada"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Steps["hello"], res.Steps["shout"])
	fmt.Println(string(res.Outputs["hello"]))
	// Output:
	// COMPLETED COMPLETED COMPLETED
	// {"message":"hello Ada"}
}

// WithTenant triggers a run for a tenant: workers claim tasks fairly
// across tenants, so one tenant's backlog does not hold up another's
// runs. A run without one belongs to the default tenant.
func ExampleWithTenant() {
	ctx := context.Background()
	_, greet, stop := startGreet(ctx)
	defer stop()

	res, err := greet.Run(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithTenant("acme"))
	if err != nil {
		panic(err)
	}
	other, err := greet.Run(ctx, json.RawMessage(`{"name":"Grace"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Tenant, other.Tenant)
	// Output: acme default
}

// WithIdempotencyKey makes a trigger safe to retry: the same key for the
// same workflow and tenant returns the first run instead of creating
// another, whatever the input.
func ExampleWithIdempotencyKey() {
	ctx := context.Background()
	_, greet, stop := startGreet(ctx)
	defer stop()

	first, err := greet.Trigger(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithIdempotencyKey("signup-42"))
	if err != nil {
		panic(err)
	}
	again, err := greet.Trigger(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithIdempotencyKey("signup-42"))
	if err != nil {
		panic(err)
	}
	fmt.Println("same run:", again.ID == first.ID, "existing:", again.Existing)
	// Output: same run: true existing: true
}

// WithPriority sets a run's priority whatever the workflow's priority
// field says: within its tenant, a high-priority run's tasks are claimed
// before normal and low ones.
func ExampleWithPriority() {
	ctx := context.Background()
	_, greet, stop := startGreet(ctx)
	defer stop()

	res, err := greet.Run(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithPriority(runtime.PriorityHigh))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Priority == runtime.PriorityHigh)
	// Output: true
}

// WithTimeout gives a run a deadline, or shortens its workflow's
// timeout: a run still running when it passes fails with "run deadline
// of ... passed" (errors.Is(err, context.DeadlineExceeded)).
func ExampleWithTimeout() {
	ctx := context.Background()
	_, greet, stop := startGreet(ctx)
	defer stop()

	res, err := greet.Run(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithTimeout(time.Minute))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status)
	// Output: COMPLETED
}

// WithStartAfter (and WithStartAt) creates the run at once but starts it
// later: until then it can be cancelled, and its idempotency key finds it.
func ExampleWithStartAfter() {
	ctx := context.Background()
	engine, greet, stop := startGreet(ctx)
	defer stop()

	ref, err := greet.Trigger(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithStartAfter(time.Hour))
	if err != nil {
		panic(err)
	}
	cancelled, err := engine.CancelRun(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("cancelled before it started:", cancelled)
	// Output: cancelled before it started: true
}
