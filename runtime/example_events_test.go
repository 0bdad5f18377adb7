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

// confirmSpec is a workflow whose run waits for a delivery-confirmed
// event, sent to the run or with the run's order id as its key (what the
// workflow file declares under events and waitFor).
var confirmSpec = &runtime.WorkflowSpec{
	Name:        "delivery",
	InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string"}}}`,
	Events: []runtime.EventSpec{{
		Name:   "delivery-confirmed",
		Schema: `{"type":"object","required":["signedBy"],"properties":{"signedBy":{"type":"string"}}}`,
	}},
	Steps: []runtime.StepSpec{
		{Name: "confirm", WaitFor: &runtime.WaitForSpec{Event: "delivery-confirmed", Key: "input.orderId", Timeout: 72 * time.Hour}},
	},
}

// drivenDelivery returns an engine driven by hand on a virtual clock (see
// Driver), with the delivery workflow registered and one run of it
// waiting for its event.
func drivenDelivery(ctx context.Context) (*runtime.Engine, *runtime.Driver, *runtime.Workflow, runtime.RunID) {
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		panic(err)
	}
	driver, err := runtime.NewDriver(engine)
	if err != nil {
		panic(err)
	}
	delivery, err := engine.Register(confirmSpec, runtime.Handlers{})
	if err != nil {
		panic(err)
	}
	ref, err := delivery.Trigger(ctx, json.RawMessage(`{"orderId":"F-2001"}`))
	if err != nil {
		panic(err)
	}
	if _, err := driver.RunUntilIdle(ctx); err != nil { // the wait begins
		panic(err)
	}
	return engine, driver, delivery, ref.ID
}

// Signal sends an event to one run: its steps waiting for that event
// complete with the payload as their output. A generated client's
// Signal<Event> does the same with a typed payload.
func ExampleWorkflow_Signal() {
	ctx := context.Background()
	_, _, delivery, id := drivenDelivery(ctx)

	woken, err := delivery.Signal(ctx, id, "delivery-confirmed", json.RawMessage(`{"signedBy":"Ada"}`))
	if err != nil {
		panic(err)
	}
	res, err := delivery.Wait(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("woke", woken, "->", res.Status, string(res.Outputs["confirm"]))

	// A payload the event's schema refuses is refused when sent.
	_, err = delivery.Signal(ctx, id, "delivery-confirmed", json.RawMessage(`{"signedBy":7}`))
	fmt.Println(err)
	// Output:
	// woke 1 -> COMPLETED {"signedBy":"Ada"}
	// invalid payload for event delivery-confirmed of workflow delivery: payload.signedBy: expected string, but got number
}

// Send sends an event by key: every step waiting for that event whose
// waitFor key has that value, in the workflow's runs of the tenant,
// receives it, now or when it begins to wait. A generated client's
// Send<Event> does the same with a typed payload.
func ExampleWorkflow_Send() {
	ctx := context.Background()
	_, _, delivery, id := drivenDelivery(ctx)

	woken, err := delivery.Send(ctx, "delivery-confirmed", "F-2001", json.RawMessage(`{"signedBy":"front desk"}`))
	if err != nil {
		panic(err)
	}
	res, err := delivery.Wait(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("woke", woken, "->", res.Status, string(res.Outputs["confirm"]))
	// Output: woke 1 -> COMPLETED {"signedBy":"front desk"}
}

// Events returns a run's event log: every state change of every step,
// in order, with its attempt.
func ExampleEngine_Events() {
	ctx := context.Background()
	engine, _, delivery, id := drivenDelivery(ctx)
	if _, err := delivery.Send(ctx, "delivery-confirmed", "F-2001", json.RawMessage(`{"signedBy":"Ada"}`)); err != nil {
		panic(err)
	}
	if _, err := delivery.Wait(ctx, id); err != nil {
		panic(err)
	}

	events, err := engine.Events(ctx, id)
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		fmt.Println(e.Step, e.Type, e.Attempt)
	}
	// Output:
	// confirm QUEUED 0
	// confirm WAITING 1
	// confirm WOKEN 1
	// confirm COMPLETED 1
}
