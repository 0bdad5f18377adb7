package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// Output decodes one step's output from a run's result through the
// step's typed reference: generated code declares one per step
// (<Workflow>Refs), so that no code names a step as a string or its
// output type twice.
func ExampleOutput() {
	ctx := context.Background()
	_, greet, stop := startGreet(ctx)
	defer stop()
	res, err := greet.Run(ctx, json.RawMessage(`{"name":"Ada","quiet":true}`))
	if err != nil {
		panic(err)
	}

	type helloOutput struct{ Message string }
	// Generated code declares this reference as GreetRefs.Hello().
	hello := runtime.NewStepRef[helloOutput]("greet", "hello")
	out, ok, err := runtime.Output(res, hello)
	fmt.Printf("%+v %v %v\n", out, ok, err)
	// Output: {Message:hello Ada} true <nil>
}

// NewLogHandler wraps a slog.Handler so that the lines a step logs with
// its context carry the run, workflow, step, attempt and tenant (and the
// trace and span when tracing is on), as the engine's own lines about a
// task do.
func ExampleNewLogHandler() {
	ctx := context.Background()
	steady := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == runtime.LogKeyRunID {
			return slog.Attr{} // left out here so that the output is the same every time
		}
		return a
	}
	log := slog.New(runtime.NewLogHandler(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: steady})))

	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	charge, err := engine.Register(chargeSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			log.InfoContext(ctx, "charging", "cents", 1500)
			return nil, nil
		},
	}})
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = engine.Stop(ctx) }()
	if _, err := charge.Run(ctx, json.RawMessage(`{}`), runtime.WithTenant("acme")); err != nil {
		panic(err)
	}
	// Output: level=INFO msg=charging cents=1500 workflow=charge step=charge attempt=1 tenant=acme
}
