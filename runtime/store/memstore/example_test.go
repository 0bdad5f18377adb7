package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// The memory store keeps runs in the process, for tests and single
// processes: an engine on it runs workflows as one on Postgres does,
// and its state lives as long as the Store value.
func ExampleNew() {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	hello, err := engine.Register(&runtime.WorkflowSpec{
		Name:        "hello",
		InputSchema: `{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`,
		Steps:       []runtime.StepSpec{{Name: "greet", OutputSchema: `{"type":"object"}`}},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"greet": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(req.Input, &in); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]string{"greeting": "hello, " + in.Name})
		},
	}})
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer func() { _ = engine.Stop(ctx) }()

	res, err := hello.Run(ctx, json.RawMessage(`{"name":"Ada"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, string(res.Outputs["greet"]))
	// Output: COMPLETED {"greeting":"hello, Ada"}
}
