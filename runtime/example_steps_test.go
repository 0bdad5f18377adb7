package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// chargeSpec is a one-step workflow whose step may be retried three
// times, a second apart.
var chargeSpec = &runtime.WorkflowSpec{
	Name:        "charge",
	InputSchema: `{"type":"object"}`,
	Steps: []runtime.StepSpec{{Name: "charge", Retry: runtime.RetryPolicy{
		MaxRetries: 3, InitialDelay: time.Second, BackoffFactor: 1, MaxDelay: time.Second}}},
}

// drivenEngine returns an engine on the memory store driven by hand on a
// virtual clock: runs go as far as they can at the clock's time, and a
// retry's backoff passes when the clock is moved (see Driver).
func drivenEngine() (*runtime.Engine, *clock.Virtual) {
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: vc})
	if err != nil {
		panic(err)
	}
	if _, err := runtime.NewDriver(engine); err != nil {
		panic(err)
	}
	return engine, vc
}

// A step's error is retried as its retry policy says, unless it is
// NonRetryable: retrying the same request cannot help, so the step fails
// at once, and so does its run.
func ExampleNonRetryable() {
	ctx := context.Background()
	engine, _ := drivenEngine()
	charge, err := engine.Register(chargeSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return nil, runtime.NonRetryable(errors.New("card declined"))
		},
	}})
	if err != nil {
		panic(err)
	}

	res, err := charge.Run(ctx, json.RawMessage(`{}`))
	var failed *runtime.RunFailedError
	fmt.Println(res.Status, errors.As(err, &failed), failed.Step, failed.Message)
	// Output: FAILED true charge card declined
}

// Step code finds the attempt it runs in its context: the run, the
// tenant, the step, the attempt (each claim of a task is a new one) and
// the retries so far. The run id and step name make a good idempotency
// key for a side effect that must happen once per step.
func ExampleInfoFromContext() {
	ctx := context.Background()
	engine, vc := drivenEngine()
	charge, err := engine.Register(chargeSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			info, _ := runtime.InfoFromContext(ctx)
			fmt.Println(info.Workflow, info.Step, info.Tenant, "attempt", info.Attempt, "retries", info.Retries)
			if info.Attempt < 2 {
				return nil, errors.New("gateway timeout")
			}
			return nil, nil
		},
	}})
	if err != nil {
		panic(err)
	}

	ref, err := charge.Trigger(ctx, json.RawMessage(`{}`), runtime.WithTenant("acme"))
	if err != nil {
		panic(err)
	}
	if _, err := charge.Wait(ctx, ref.ID); !errors.Is(err, runtime.ErrStillRunning) {
		panic(err) // the first attempt failed: the retry waits a second
	}
	vc.Advance(time.Second)
	res, err := charge.Wait(ctx, ref.ID)
	fmt.Println(res.Status, err)
	// Output:
	// charge charge acme attempt 1 retries 0
	// charge charge acme attempt 2 retries 1
	// COMPLETED <nil>
}

// RetryRun gives a failed run another go: its failed steps run again
// with a fresh retry budget, and completed steps keep their outputs.
func ExampleEngine_RetryRun() {
	ctx := context.Background()
	engine, _ := drivenEngine()
	var gatewayUp atomic.Bool
	charge, err := engine.Register(chargeSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			if !gatewayUp.Load() {
				return nil, runtime.NonRetryable(errors.New("payment gateway unavailable"))
			}
			return json.RawMessage(`{"chargeId":"ch_1"}`), nil
		},
	}})
	if err != nil {
		panic(err)
	}
	res, _ := charge.Run(ctx, json.RawMessage(`{}`))
	fmt.Println(res.Status, res.Failure.Error)

	gatewayUp.Store(true) // the gateway is back
	if err := engine.RetryRun(ctx, res.ID); err != nil {
		panic(err)
	}
	res, err = charge.Wait(ctx, res.ID)
	fmt.Println(res.Status, err)
	// Output:
	// FAILED payment gateway unavailable
	// COMPLETED <nil>
}

// RerunRun runs a finished run again from a step: that step and the
// steps below it run again, as new attempts of the same run, with the
// kept outputs of the steps above it.
func ExampleEngine_RerunRun() {
	ctx := context.Background()
	engine, _ := drivenEngine()
	var rate atomic.Int64
	rate.Store(100)
	quote, err := engine.Register(&runtime.WorkflowSpec{Name: "quote", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "fetch"}, {Name: "price", Parents: []string{"fetch"}}}},
		runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"fetch": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
				return json.RawMessage(`{"sku":"a-1"}`), nil
			},
			"price": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
				return json.RawMessage(fmt.Sprintf(`{"cents":%d}`, rate.Load())), nil
			},
		}})
	if err != nil {
		panic(err)
	}
	res, _ := quote.Run(ctx, json.RawMessage(`{}`))
	fmt.Println(res.Status, string(res.Outputs["price"]))

	rate.Store(120) // the price list changed: price again, fetch needs no redo
	if err := engine.RerunRun(ctx, res.ID, "price"); err != nil {
		panic(err)
	}
	res, err = quote.Wait(ctx, res.ID)
	fmt.Println(res.Status, string(res.Outputs["price"]), err)
	var unknown *runtime.UnknownStepError
	if err := engine.RerunRun(ctx, res.ID, "prise"); errors.As(err, &unknown) {
		fmt.Println(unknown)
	}
	// Output:
	// COMPLETED {"cents":100}
	// COMPLETED {"cents":120} <nil>
	// workflow quote has no step "prise" to rerun from; did you mean "price"?
}

// CancelRun cancels a running run: its unfinished steps are cancelled,
// and running ones see their context cancelled. It reports whether the
// run was running.
func ExampleEngine_CancelRun() {
	ctx := context.Background()
	engine, _ := drivenEngine()
	nap, err := engine.Register(&runtime.WorkflowSpec{Name: "nap", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "sleep", Sleep: 24 * time.Hour}}}, runtime.Handlers{})
	if err != nil {
		panic(err)
	}
	ref, err := nap.Trigger(ctx, json.RawMessage(`{}`))
	if err != nil {
		panic(err)
	}

	cancelled, err := engine.CancelRun(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	again, _ := engine.CancelRun(ctx, ref.ID)
	res, err := engine.Result(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(cancelled, again, res.Status, res.Steps["sleep"])
	// Output: true false CANCELLED CANCELLED
}
