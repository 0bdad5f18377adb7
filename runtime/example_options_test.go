package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"

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
