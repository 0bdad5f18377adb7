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

// reviewSpec is a workflow that order-placed events start when their
// total is over 100, with an input built from the payload (what the
// workflow file declares under events and startOn).
var reviewSpec = &runtime.WorkflowSpec{
	Name:        "review",
	InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string"}}}`,
	Events: []runtime.EventSpec{{
		Name:   "order-placed",
		Schema: `{"type":"object","required":["id","total"],"properties":{"id":{"type":"string"},"total":{"type":"integer"}}}`,
	}},
	StartOn: []runtime.StartOnSpec{{
		Event: "order-placed", If: "payload.total > 100", Input: map[string]string{"orderId": "payload.id"},
	}},
	Steps: []runtime.StepSpec{{Name: "check"}},
}

// PublishEvent starts a run of every workflow that starts on the event
// and whose filter matches; with an event id, publishing it again starts
// nothing new. A generated client's Publish<Event> does the same with a
// typed payload.
func ExampleEngine_PublishEvent() {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		panic(err)
	}
	if _, err := runtime.NewDriver(engine); err != nil {
		panic(err)
	}
	checked := runtime.RootStepNoOutput(func(ctx context.Context, in struct{ OrderID string }) error { return nil })
	review, err := engine.Register(reviewSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{"check": checked}})
	if err != nil {
		panic(err)
	}

	for _, p := range []struct{ id, payload string }{
		{"evt-1", `{"id":"o-1","total":250}`},
		{"evt-2", `{"id":"o-2","total":20}`},
		{"evt-1", `{"id":"o-1","total":250}`}, // published again
	} {
		pub, err := engine.PublishEvent(ctx, "order-placed", p.id, json.RawMessage(p.payload))
		if err != nil {
			panic(err)
		}
		l := pub.Listeners[0]
		switch {
		case l.Filtered:
			fmt.Println(p.id, l.Workflow, "filtered out")
		case l.Existing:
			fmt.Println(p.id, l.Workflow, "already started")
		default:
			res, err := review.Wait(ctx, l.Run)
			if err != nil {
				panic(err)
			}
			fmt.Println(p.id, l.Workflow, "started", res.Status)
		}
	}
	// Output:
	// evt-1 review started COMPLETED
	// evt-2 review filtered out
	// evt-1 review already started
}

// WithEventKey makes a publish also deliver its event, with the key, to
// the steps that wait for it by key, in every workflow: here it starts a
// review and completes the wait of a follow-up run for the order.
func ExampleWithEventKey() {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		panic(err)
	}
	driver, err := runtime.NewDriver(engine)
	if err != nil {
		panic(err)
	}
	checked := runtime.RootStepNoOutput(func(ctx context.Context, in struct{ OrderID string }) error { return nil })
	if _, err := engine.Register(reviewSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{"check": checked}}); err != nil {
		panic(err)
	}
	followup, err := engine.Register(&runtime.WorkflowSpec{
		Name:        "followup",
		InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string"}}}`,
		Events:      reviewSpec.Events,
		Steps: []runtime.StepSpec{{
			Name: "placed", WaitFor: &runtime.WaitForSpec{Event: "order-placed", Key: "input.orderId"},
		}},
	}, runtime.Handlers{})
	if err != nil {
		panic(err)
	}
	run, err := followup.Trigger(ctx, json.RawMessage(`{"orderId":"o-1"}`))
	if err != nil {
		panic(err)
	}
	if _, err := driver.RunUntilIdle(ctx); err != nil { // the run begins to wait
		panic(err)
	}

	pub, err := engine.PublishEvent(ctx, "order-placed", "evt-1", json.RawMessage(`{"id":"o-1","total":250}`), runtime.WithEventKey("o-1"))
	if err != nil {
		panic(err)
	}
	for _, l := range pub.Listeners {
		switch {
		case l.Delivered != nil:
			fmt.Println(l.Workflow, "woke", l.Delivered.Woken)
		case l.Run != runtime.RunID{}:
			fmt.Println(l.Workflow, "started a run")
		}
	}
	res, err := followup.Wait(ctx, run.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("followup", res.Status)
	// Output:
	// followup woke 1
	// review started a run
	// followup COMPLETED
}
