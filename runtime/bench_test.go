package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// Benchmarks of the memory store. They report runs/s and tasks/s; run
// them with
//
//	go test ./runtime -run '^$' -bench Memory -benchtime 20000x

// noopOrders implements the order workflow doing nothing.
type noopOrders struct{}

func (noopOrders) Validate(context.Context, workflow.OrderProcessingInput) (workflow.OrderProcessingValidateOutput, error) {
	return workflow.OrderProcessingValidateOutput{IsValid: true}, nil
}

func (noopOrders) Charge(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingChargeParents) (workflow.OrderProcessingChargeOutput, error) {
	return workflow.OrderProcessingChargeOutput{}, nil
}

func (noopOrders) Reject(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingRejectParents) error {
	return nil
}

func (noopOrders) PrepareShipment(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingPrepareShipmentParents) error {
	return nil
}

func (noopOrders) Ship(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingShipParents) error {
	return nil
}

func (noopOrders) Finalize(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingFinalizeParents) error {
	return nil
}

func (noopOrders) NotifyAdmin(context.Context, workflow.OrderProcessingInput, runtime.Failure) error {
	return nil
}

// BenchmarkMemoryOrderWorkflow runs the order workflow (seven tasks a run,
// one of them skipped and one a 24h sleep) b.N times on the memory store,
// driven by hand on a virtual clock: the figure is the engine's own cost.
// With otel=on the engine has OpenTelemetry's SDK providers, every span
// sampled and batched to an exporter that drops it, metrics aggregated
// for a reader: the cost of the instrumentation, in time and allocations.
func BenchmarkMemoryOrderWorkflow(b *testing.B) {
	b.Run("otel=off", func(b *testing.B) { benchmarkOrders(b, func(*runtime.Config) {}) })
	b.Run("otel=on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
		benchmarkOrders(b, func(c *runtime.Config) { c.TracerProvider, c.MeterProvider = tp, mp })
	})
}

func benchmarkOrders(b *testing.B, configure func(*runtime.Config)) {
	ctx := context.Background()
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := runtime.Config{Store: memstore.New(), Clock: vc, ClaimBatch: 256}
	configure(&cfg)
	engine, err := runtime.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	driver, err := runtime.NewDriver(engine)
	if err != nil {
		b.Fatal(err)
	}
	orders, err := workflow.RegisterOrderProcessing(engine, noopOrders{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	ids := make([]runtime.RunID, b.N)
	for i := range b.N {
		ref, err := orders.RunNoWait(ctx, workflow.OrderProcessingInput{OrderID: "o", AmountCents: int64(i + 1)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = ref.ID
	}
	drain(b, driver)
	vc.Advance(24 * time.Hour)
	drain(b, driver)
	elapsed := time.Since(start)
	b.StopTimer()
	// Every run went the whole way: the figure is of finished work.
	results, err := orders.WaitMany(ctx, ids)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range results {
		if r.Status != runtime.RunCompleted {
			b.Fatalf("run %s is %s, want COMPLETED", r.ID, r.Status)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(7*b.N)/elapsed.Seconds(), "tasks/s")
}

func drain(b *testing.B, d *runtime.Driver) {
	if _, err := d.RunUntilIdle(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMemoryEngineFanOut runs b.N runs of a -> (b1..b4) -> c (six
// no-op tasks) through a started engine with 32 concurrent steps: claim
// loop, worker goroutines and batched results, on real time.
func BenchmarkMemoryEngineFanOut(b *testing.B) {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Concurrency: 32})
	if err != nil {
		b.Fatal(err)
	}
	spec := fanSpec("fan", 0)
	var c counter
	wf, err := engine.Register(spec, c.handlers(spec, nil))
	if err != nil {
		b.Fatal(err)
	}
	if err := engine.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := engine.Stop(ctx); err != nil {
			b.Error(err)
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	ids := make([]runtime.RunID, b.N)
	for i := range ids {
		ref, err := wf.Trigger(ctx, json.RawMessage(`{}`))
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = ref.ID
	}
	for _, id := range ids {
		if _, err := wf.Wait(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(6*b.N)/elapsed.Seconds(), "tasks/s")
}
