package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// What `trellis generate` writes for greetSpec, by hand: the input and
// output types, the step references, the typed result and the function
// that decodes it. A generated file names the client
// (type GreetClient = runtime.Client[GreetInput, GreetResult]) and makes
// it in NewGreetClient and RegisterGreet, as newGreetClient does here.

type GreetInput struct {
	Name  string `json:"name"`
	Quiet bool   `json:"quiet,omitempty"`
}

type GreetHelloOutput struct {
	Message string `json:"message"`
}

type GreetShoutParents struct {
	Hello GreetHelloOutput `trellis:"hello"`
}

type GreetResult struct {
	ID     runtime.RunID
	Status runtime.RunStatus
	Hello  *GreetHelloOutput
	Shout  runtime.TaskStatus
}

func greetHello() runtime.StepRef[GreetHelloOutput] {
	return runtime.NewStepRef[GreetHelloOutput]("greet", "hello")
}

func greetShout() runtime.StepRef[runtime.NoOutput] {
	return runtime.NewStepRef[runtime.NoOutput]("greet", "shout")
}

func greetResult(res *runtime.RunResult) (GreetResult, error) {
	out := GreetResult{ID: res.ID, Status: res.Status, Shout: greetShout().Status(res)}
	var errs []error
	out.Hello = runtime.DecodeOutput(res, greetHello(), &errs)
	return out, errors.Join(errs...)
}

// newGreetClient is RegisterGreet: the step code, typed through the
// runtime's adapters, and the client.
func newGreetClient(e *runtime.Engine) (*runtime.Client[GreetInput, GreetResult], error) {
	w, err := e.Register(greetSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"hello": runtime.RootStep(func(_ context.Context, in GreetInput) (GreetHelloOutput, error) {
			return GreetHelloOutput{Message: "hello " + in.Name}, nil
		}),
		"shout": runtime.StepNoOutput(func(context.Context, GreetInput, GreetShoutParents) error { return nil }),
	}})
	if err != nil {
		return nil, err
	}
	return runtime.NewClient[GreetInput](w, greetResult), nil
}

// memEngine returns an engine on a memory store, and the function that
// stops it once started.
func memEngine(ctx context.Context) (*runtime.Engine, func()) {
	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	return engine, func() { _ = engine.Stop(ctx) }
}

// A Client triggers runs with a typed input and returns typed results:
// Run waits for the run to end. Generated code makes one per workflow.
func ExampleClient() {
	ctx := context.Background()
	engine, stop := memEngine(ctx)
	greet, err := newGreetClient(engine)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer stop()

	res, err := greet.Run(ctx, GreetInput{Name: "Ada", Quiet: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Hello.Message, res.Shout)
	// Output: COMPLETED hello Ada SKIPPED
}

// RunNoWait returns as soon as the run is stored, with an idempotency key
// that makes a retry return the same run; Wait waits for it.
func ExampleClient_RunNoWait() {
	ctx := context.Background()
	engine, stop := memEngine(ctx)
	greet, err := newGreetClient(engine)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer stop()

	ref, err := greet.RunNoWait(ctx, GreetInput{Name: "Grace"}, runtime.WithIdempotencyKey("greet-grace"))
	if err != nil {
		panic(err)
	}
	again, err := greet.RunNoWait(ctx, GreetInput{Name: "Grace"}, runtime.WithIdempotencyKey("greet-grace"))
	if err != nil {
		panic(err)
	}
	fmt.Println("the retry returned the first run:", again.ID == ref.ID && again.Existing)

	res, err := greet.Wait(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.Hello.Message, res.Shout)
	// Output:
	// the retry returned the first run: true
	// COMPLETED hello Grace COMPLETED
}

// RunManyNoWait starts a batch of runs in one transaction; WaitMany waits
// for all of them and returns one typed result per run, in order.
func ExampleClient_WaitMany() {
	ctx := context.Background()
	engine, stop := memEngine(ctx)
	greet, err := newGreetClient(engine)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer stop()

	refs, err := greet.RunManyNoWait(ctx, []GreetInput{{Name: "Ada"}, {Name: "Grace", Quiet: true}})
	if err != nil {
		panic(err)
	}
	results, err := greet.WaitMany(ctx, []runtime.RunID{refs[0].ID, refs[1].ID})
	if err != nil {
		panic(err)
	}
	for _, res := range results {
		fmt.Println(res.Status, res.Hello.Message, res.Shout)
	}
	// Output:
	// COMPLETED hello Ada COMPLETED
	// COMPLETED hello Grace SKIPPED
}

// Result reads a run as it is now, without waiting: here it sleeps for a
// day, on a driven engine's virtual clock, so it has no output yet.
func ExampleClient_Result() {
	ctx := context.Background()
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	engine, err := runtime.New(runtime.Config{Store: memstore.New(), Clock: vc})
	if err != nil {
		panic(err)
	}
	driver, err := runtime.NewDriver(engine)
	if err != nil {
		panic(err)
	}
	type napResult struct {
		Status runtime.RunStatus
		Sleep  runtime.TaskStatus
	}
	nap := &runtime.WorkflowSpec{Name: "nap", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "sleep", Sleep: 24 * time.Hour}}}
	w, err := engine.Register(nap, runtime.Handlers{})
	if err != nil {
		panic(err)
	}
	client := runtime.NewClient[struct{}](w, func(res *runtime.RunResult) (napResult, error) {
		sleep := runtime.NewStepRef[runtime.NoOutput]("nap", "sleep")
		return napResult{Status: res.Status, Sleep: sleep.Status(res)}, nil
	})

	ref, err := client.RunNoWait(ctx, struct{}{})
	if err != nil {
		panic(err)
	}
	if _, err := driver.RunUntilIdle(ctx); err != nil {
		panic(err)
	}
	now, err := client.Result(ctx, ref.ID)
	fmt.Println("now:", now.Status, now.Sleep, err)

	vc.Advance(24 * time.Hour)
	later, err := client.Wait(ctx, ref.ID) // with a driver, Wait runs what can run now
	fmt.Println("after a day:", later.Status, later.Sleep, err)
	// Output:
	// now: RUNNING SLEEPING <nil>
	// after a day: COMPLETED COMPLETED <nil>
}

// CreateSchedule starts a run with the given input at every tick of a
// cron expression, on every started engine that registered the workflow;
// schedules can be paused, resumed and deleted by name.
func ExampleClient_CreateSchedule() {
	ctx := context.Background()
	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	greet, err := newGreetClient(engine)
	if err != nil {
		panic(err)
	}

	s, err := greet.CreateSchedule(ctx, "morning", "0 9 * * *", GreetInput{Name: "team"}, runtime.WithTimezone("Europe/Amsterdam"))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name, s.Cron, s.Timezone, string(s.Input))
	if s, err = greet.PauseSchedule(ctx, "morning"); err != nil {
		panic(err)
	}
	fmt.Println("paused:", s.Paused)
	if err := greet.DeleteSchedule(ctx, "morning"); err != nil {
		panic(err)
	}
	left, err := greet.Schedules(ctx)
	fmt.Println("left:", len(left), err)
	// Output:
	// morning 0 9 * * * Europe/Amsterdam {"name":"team"}
	// paused: true
	// left: 0 <nil>
}

// Pause holds the workflow's runs for the tenants given (every tenant
// when none is): they are created, but no step of them starts until
// Resume, and then they run as if never held.
func ExampleClient_Pause() {
	ctx := context.Background()
	engine, stop := memEngine(ctx)
	greet, err := newGreetClient(engine)
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer stop()

	if _, err := greet.Pause(ctx, "acme"); err != nil {
		panic(err)
	}
	ref, err := greet.RunNoWait(ctx, GreetInput{Name: "Ada"}, runtime.WithTenant("acme"))
	if err != nil {
		panic(err)
	}
	other, err := greet.Run(ctx, GreetInput{Name: "Grace"}, runtime.WithTenant("globex"))
	if err != nil {
		panic(err)
	}
	fmt.Println("globex's run:", other.Status)
	pauses, err := engine.PausedWorkflows(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("paused: %s for %s, %d queued\n", pauses[0].Workflow, pauses[0].Tenant, pauses[0].Queued)

	if _, err := greet.Resume(ctx, "acme"); err != nil {
		panic(err)
	}
	res, err := greet.Wait(ctx, ref.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("acme's run, resumed:", res.Status, res.Hello.Message)
	// Output:
	// globex's run: COMPLETED
	// paused: greet for acme, 1 queued
	// acme's run, resumed: COMPLETED hello Ada
}
