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

// CreateSchedule creates a cron schedule while the program runs; every
// started engine that registered the workflow fires it, each tick
// starting one run. Here an engine driven by hand on a virtual clock
// (see Driver) fires the first tick after the schedule was created.
func ExampleWorkflow_CreateSchedule() {
	ctx := context.Background()
	vc := clock.NewVirtual(time.Date(2030, 1, 7, 5, 5, 0, 0, time.UTC))
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: vc})
	if err != nil {
		panic(err)
	}
	driver, err := runtime.NewDriver(engine)
	if err != nil {
		panic(err)
	}
	greet, err := engine.Register(greetSpec, greetHandlers)
	if err != nil {
		panic(err)
	}

	s, err := greet.CreateSchedule(ctx, "every-ten", "*/10 * * * *", json.RawMessage(`{"name":"Ada"}`),
		runtime.WithTimezone("Europe/Amsterdam"), runtime.WithScheduleTenant("acme"))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Workflow, s.Name, s.Cron, s.Timezone, s.Tenant)

	vc.Advance(5 * time.Minute) // 05:10, the first tick after 05:05
	if _, err := driver.RunUntilIdle(ctx); err != nil {
		panic(err)
	}
	// Each tick's run has the idempotency key trellis:schedule:<name>:<tick
	// in UTC>, so that however many engines see the tick, one run starts.
	ref, err := greet.Trigger(ctx, json.RawMessage(`{"name":"Ada"}`), runtime.WithTenant("acme"),
		runtime.WithIdempotencyKey("trellis:schedule:every-ten:2030-01-07T05:10:00Z"))
	if err != nil {
		panic(err)
	}
	res, err := greet.Result(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("the 05:10 tick started a run:", ref.Existing, res.Status)

	// A bad cron expression is refused, naming the problem; nothing is written.
	_, err = greet.CreateSchedule(ctx, "weekly", "0 3 * *", json.RawMessage(`{"name":"Ada"}`))
	fmt.Println(err)
	// Output:
	// greet every-ten */10 * * * * Europe/Amsterdam acme
	// the 05:10 tick started a run: true COMPLETED
	// schedule weekly of workflow greet: cron expression "0 3 * *": expected exactly 5 fields, found 4: [0 3 * *]
}
