// Package trellistest tests workflows in-process, in milliseconds: an
// engine on the memory store with a virtual clock, driven by hand so that
// every run is deterministic. A 24-hour sleep or a one-minute retry backoff
// passes when the test says so, instantly.
//
//	h := trellistest.New(t)
//	orders, _ := workflow.RegisterOrderProcessing(h.Engine, &steps{})
//	res, err := orders.Run(ctx, input) // runs until done or waiting on time
//	// res.Status == runtime.RunRunning: the fraud window sleeps
//	// res.Charge holds the charge's output, res.Steps.Ship == runtime.TaskPending
//	h.Advance(24 * time.Hour)          // wakes it; the rest of the run completes
//	res, err = orders.Wait(ctx, res.ID)
//
// Register workflows on h.Engine with the generated Register functions and
// read outputs from the typed results their clients return. Run and Wait
// (and h.Engine.WaitMany) drive the engine themselves, then return the
// result; a client's Result returns the same typed result at any point
// without driving anything (after RunNoWait, between Advances). RunUntilIdle, Advance and Settle
// drive the engine explicitly; Trail, Times, Steps and Events inspect what
// happened, by step name, and Output reads one step's output by its typed
// reference (<Workflow>Refs).
//
// The harness runs its engine with a runtime.Driver: tasks take the same
// path as on a started engine (claimed in batches, steps run concurrently,
// each result recorded as it arrives), so a step that blocks until it is
// cancelled ends when its run ends, however it ends: it fails or is
// cancelled, or is ended with another run (a map item's run when another
// item fails for good, a child run when its parent is cancelled). While a
// step blocks, the clock can be moved from another goroutine with
// h.Clock.Advance: step timeouts, durable timers (sleeps, retry backoffs)
// and cron ticks that fall due fire as they would on a started engine.
// runtime's agreement tests run the same scenarios against both.
package trellistest

import (
	"context"
	"encoding/json"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// start is the virtual clock's reading when a harness is created.
func start() time.Time { return time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC) }

// T is the part of testing.TB the harness uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Context() context.Context
}

// Harness is an engine on a virtual clock, driven by hand.
type Harness struct {
	t      T
	Engine *runtime.Engine
	Driver *runtime.Driver
	Clock  *clock.Virtual
	Store  store.Store
	// Start is when the harness's clock started.
	Start time.Time
}

// Option adjusts a harness.
type Option func(*runtime.Config)

// WithStore runs the harness on another store (the Postgres store, for
// example); the memory store is the default. The store must be the
// test's own (pgtest.Pool gives each test a schema): the harness's
// virtual clock moves every run in it.
func WithStore(s store.Store) Option { return func(c *runtime.Config) { c.Store = s } }

// WithConfig lets a test change any engine setting.
func WithConfig(f func(*runtime.Config)) Option { return Option(f) }

// New returns a harness whose engine is not started: nothing happens until
// the test drives it.
func New(t T, opts ...Option) *Harness {
	t.Helper()
	vc := clock.NewVirtual(start())
	cfg := runtime.Config{Store: memstore.New(), Clock: vc, WorkerID: "trellistest"}
	for _, opt := range opts {
		opt(&cfg)
	}
	e, err := runtime.New(cfg)
	if err != nil {
		t.Fatalf("trellistest: %v", err)
	}
	d, err := runtime.NewDriver(e)
	if err != nil {
		t.Fatalf("trellistest: %v", err)
	}
	return &Harness{t: t, Engine: e, Driver: d, Clock: vc, Store: cfg.Store, Start: vc.Now()}
}

// RunUntilIdle fires due timers and executes ready tasks until nothing more
// can happen at the current time. It returns how many tasks it processed.
func (h *Harness) RunUntilIdle() int {
	h.t.Helper()
	n, err := h.Driver.RunUntilIdle(h.t.Context())
	if err != nil {
		h.t.Fatalf("trellistest: %v", err)
	}
	return n
}

// Advance moves the virtual clock forward by d, firing the durable timers
// (sleeps, retry backoffs) and step deadlines that fall due in order, and
// runs until idle after each. It returns how many tasks it processed.
func (h *Harness) Advance(d time.Duration) int {
	h.t.Helper()
	target := h.Clock.Now().Add(d)
	total := h.RunUntilIdle()
	for {
		next, ok, err := h.Store.NextTimer(h.t.Context())
		if err != nil {
			h.t.Fatalf("trellistest: %v", err)
		}
		// Cron schedules tick too: each tick on the way starts its run.
		if tick, due := h.Driver.NextScheduleTick(); due && (!ok || tick.Before(next)) {
			next, ok = tick, true
		}
		if !ok || next.After(target) {
			break
		}
		h.Clock.Set(next)
		total += h.RunUntilIdle()
	}
	h.Clock.Set(target)
	return total + h.RunUntilIdle()
}

// Settle runs until no task is ready and no timer is pending, moving the
// clock to each timer in turn: every run ends (or waits for something only
// the test can do). It returns how long the clock moved.
func (h *Harness) Settle() time.Duration {
	h.t.Helper()
	from := h.Clock.Now()
	h.RunUntilIdle()
	for {
		next, ok, err := h.Store.NextTimer(h.t.Context())
		if err != nil {
			h.t.Fatalf("trellistest: %v", err)
		}
		if !ok {
			return h.Clock.Now().Sub(from)
		}
		h.Clock.Set(next)
		h.RunUntilIdle()
	}
}

// Now is the virtual clock's reading.
func (h *Harness) Now() time.Time { return h.Clock.Now() }

// Result returns the state of a run, untyped, by step name; a generated
// client's Result returns it with typed outputs.
func (h *Harness) Result(id runtime.RunID) *runtime.RunResult {
	h.t.Helper()
	res, err := h.Engine.Result(h.t.Context(), id)
	if err != nil {
		h.t.Fatalf("trellistest: %v", err)
	}
	return res
}

// Steps returns the status of every step of a run, by name.
func (h *Harness) Steps(id runtime.RunID) map[string]runtime.TaskStatus {
	h.t.Helper()
	return h.Result(id).Steps
}

// Events returns a run's event log.
func (h *Harness) Events(id runtime.RunID) []runtime.Event {
	h.t.Helper()
	events, err := h.Engine.Events(h.t.Context(), id)
	if err != nil {
		h.t.Fatalf("trellistest: %v", err)
	}
	return events
}

// Trail returns the event types of one step of a run, in order: for
// example [QUEUED STARTED RETRYING QUEUED STARTED COMPLETED].
func (h *Harness) Trail(id runtime.RunID, step string) []runtime.EventType {
	h.t.Helper()
	var out []runtime.EventType
	for _, ev := range h.Events(id) {
		if ev.Step == step {
			out = append(out, ev.Type)
		}
	}
	return out
}

// Times returns when each event of a type of one step of a run happened,
// relative to h.Start: the way to check a retry schedule.
func (h *Harness) Times(id runtime.RunID, step string, typ runtime.EventType) []time.Duration {
	h.t.Helper()
	var out []time.Duration
	for _, ev := range h.Events(id) {
		if ev.Step == step && ev.Type == typ {
			out = append(out, ev.At.Sub(h.Start))
		}
	}
	return out
}

// Output decodes the output of a step of a run, named by its typed
// reference (<Workflow>Refs in generated code); ok is false when the step
// did not complete. It reads the run as it is now, without driving the
// engine, like a client's Result.
func Output[T any](h *Harness, id runtime.RunID, ref runtime.StepRef[T]) (out T, ok bool) {
	h.t.Helper()
	out, ok, err := runtime.Output(h.Result(id), ref)
	if err != nil {
		h.t.Fatalf("trellistest: %v", err)
	}
	return out, ok
}

// ChildRuns returns the runs step started in run id: the items of a map
// step in item order, or the run of each attempt of a child workflow
// step (see runtime.Engine.ChildRuns). Read their outputs from
// RunResult.Outputs, or check their Status.
func (h *Harness) ChildRuns(id runtime.RunID, step string) []*runtime.RunResult {
	h.t.Helper()
	runs, err := h.Engine.ChildRuns(h.t.Context(), id, step)
	if err != nil {
		h.t.Fatalf("trellistest: %v", err)
	}
	return runs
}

// Items returns the items of map step step in run id, in item order: for
// each item the run that counts, its latest (an item that a retry of the
// run ran again has one run per try).
func (h *Harness) Items(id runtime.RunID, step string) []*runtime.RunResult {
	h.t.Helper()
	var out []*runtime.RunResult
	for _, r := range h.ChildRuns(id, step) {
		if n := len(out); n > 0 && out[n-1].Parent.Index == r.Parent.Index {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	return out
}

// JSON marshals v for use as a raw step output or input in tests.
func JSON(t T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("trellistest: %v", err)
	}
	return b
}
