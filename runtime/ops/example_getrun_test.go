package ops_test

import (
	"context"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Show one run as trellis runs show does: its facts, its failure, and
// each step with its status, attempts, error and output.
func ExampleAdmin_GetRun() {
	ctx := context.Background()
	// An engine with a failed run, driven by hand (see runtime.Driver).
	engine, _ := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	client, _ := wf.RegisterChain(engine, chain{})
	_, _ = runtime.NewDriver(engine)
	res, _ := client.Run(ctx, wf.ChainInput{Start: -1})

	// On Postgres: runtime.New(runtime.Config{Store: pgstore.New(pool)}),
	// not started.
	admin := ops.New(engine)
	run, err := admin.GetRun(ctx, res.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Workflow, run.Tenant, run.Status, run.Failure.Step)
	for _, s := range run.Steps {
		fmt.Printf("%s: %s, %d attempt(s), error %q, output %q\n", s.Name, s.Status, s.Attempts, s.Error, s.Output)
	}
	// Output:
	// chain default FAILED second
	// first: COMPLETED, 1 attempt(s), error "", output "{\"value\":0}"
	// second: FAILED, 1 attempt(s), error "negative start", output ""
	// third: CANCELLED, 0 attempt(s), error "", output ""
}
