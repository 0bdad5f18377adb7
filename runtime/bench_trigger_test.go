package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// BenchmarkMemoryTrigger creates b.N runs of the order workflow, one
// trigger each, on the memory store: the cost of the trigger path alone
// (validation, priority, tasks, the store's insert), which publishing an
// event shares.
func BenchmarkMemoryTrigger(b *testing.B) {
	ctx := context.Background()
	e, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		b.Fatal(err)
	}
	client, err := workflow.RegisterOrderProcessing(e, noopOrders{})
	if err != nil {
		b.Fatal(err)
	}
	in := workflow.OrderProcessingInput{OrderID: "o-1", AmountCents: 100}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.RunNoWait(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryPublish publishes b.N order-placed events, each starting
// a run of big-orders (a filter and an input built field by field) and
// one of receipts (the payload as input), with an event id each: the
// cost of a publish, listeners found and runs created.
func BenchmarkMemoryPublish(b *testing.B) {
	ctx := context.Background()
	e, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := wf.RegisterBigOrders(e, &bigOrderSteps{}); err != nil {
		b.Fatal(err)
	}
	if _, err := wf.RegisterReceipts(e, &receiptSteps{}); err != nil {
		b.Fatal(err)
	}
	payload := json.RawMessage(`{"id": "o-1", "total": 500}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		pub, err := e.PublishEvent(ctx, "order-placed", fmt.Sprint(i), payload)
		if err != nil || len(pub.Started()) != 2 {
			b.Fatalf("publish = %+v, %v", pub, err)
		}
	}
}
