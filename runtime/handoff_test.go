package runtime_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

func TestHandOffsMemory(t *testing.T) { testHandOffs(t, memstore.New()) }

func TestHandOffsPostgres(t *testing.T) { testHandOffs(t, pgstore.New(pgtest.Pool(t))) }

// A run of a -> b1..b4 -> c goes on in its worker after its root is
// claimed: a's completion hands off all four children (the slot a held,
// and three free ones), and the last b's completion hands off c. With
// DisableHandOff, every task is claimed.
func testHandOffs(t *testing.T, s store.Store) {
	for _, disabled := range []bool{false, true} {
		tel := newTelemetry(t)
		h := trellistest.New(t, trellistest.WithStore(s), trellistest.WithConfig(func(c *runtime.Config) {
			tel.configure(c)
			c.Concurrency = 10
			c.DisableHandOff = disabled
		}))
		noop := func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		}
		name := "fan"
		if disabled {
			name = "fan-claimed"
		}
		handed, claimed := runFan(t, h, tel, name, noop, !disabled)
		want := [2]int64{5, 1}
		if disabled {
			want = [2]int64{0, 6}
		}
		if handed != want[0] || claimed != want[1] {
			t.Errorf("DisableHandOff %v: %d tasks handed off and %d claimed, want %d and %d", disabled, handed, claimed, want[0], want[1])
		}
	}
}

// runFan registers fanSpec(name, 0) with step for every step, runs it to
// completion, checks that each task's log reads QUEUED, STARTED,
// COMPLETED, and returns how many tasks were handed off (read only with
// handOffs: an engine without them records none) and claimed.
func runFan(t *testing.T, h *trellistest.Harness, tel *telemetry, name string, step runtime.StepFunc, handOffs bool) (handed, claimed int64) {
	t.Helper()
	spec := fanSpec(name, 0)
	handlers := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
	for _, st := range spec.Steps {
		handlers.Steps[st.Name] = step
	}
	wf, err := h.Engine.Register(spec, handlers)
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(t.Context(), json.RawMessage(`{}`))
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	for _, st := range spec.Steps {
		if got := h.Trail(res.ID, st.Name); len(got) != 3 {
			t.Errorf("%s: step %s's events %v, want QUEUED, STARTED, COMPLETED", name, st.Name, got)
		}
	}
	ms := tel.metrics(t)
	if handOffs {
		handed = ms.sum(t, "trellis.task.handed_off")
	}
	if _, size := ms.histogram(t, "trellis.claim.size"); size > 0 {
		claimed = int64(size)
	}
	return handed, claimed
}

func TestHandOffsBeyondSlotsMemory(t *testing.T) { testHandOffsBeyondSlots(t, memstore.New()) }

func TestHandOffsBeyondSlotsPostgres(t *testing.T) {
	testHandOffsBeyondSlots(t, pgstore.New(pgtest.Pool(t)))
}

// With two slots, a's completion still hands off all four b's: two take
// a's slot and the free one, the others wait (up to Concurrency of them)
// for the slots the b's free, ahead of any claim, and never do more than
// two steps run at once. Only a is claimed, and each task's log reads
// QUEUED, STARTED, COMPLETED.
func testHandOffsBeyondSlots(t *testing.T, s store.Store) {
	tel := newTelemetry(t)
	h := trellistest.New(t, trellistest.WithStore(s), trellistest.WithConfig(func(c *runtime.Config) {
		tel.configure(c)
		c.Concurrency = 2
	}))
	var running, most atomic.Int64
	step := func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return json.RawMessage(`{}`), nil
	}
	handed, claimed := runFan(t, h, tel, "fan-two-slots", step, true)
	if handed != 5 || claimed != 1 {
		t.Errorf("%d tasks handed off and %v claimed, want 5 and 1", handed, claimed)
	}
	if n := most.Load(); n > 2 {
		t.Errorf("%d steps ran at once, want at most 2 (Concurrency)", n)
	}
}

func TestHandOffWaitingWhenRunEndsMemory(t *testing.T) {
	testHandOffWaitingWhenRunEnds(t, memstore.New())
}

func TestHandOffWaitingWhenRunEndsPostgres(t *testing.T) {
	testHandOffWaitingWhenRunEnds(t, pgstore.New(pgtest.Pool(t)))
}

// With one slot, a's completion hands off b1 to run and one more b to
// wait for the slot. The run is cancelled while the first b runs: the
// waiting b is never started, although the first b's slot frees (the
// run's end cancels it, as it cancels the queued ones), and no other b
// or c runs.
func testHandOffWaitingWhenRunEnds(t *testing.T, s store.Store) {
	h := trellistest.New(t, trellistest.WithStore(s), trellistest.WithConfig(func(c *runtime.Config) {
		c.Concurrency = 1
	}))
	var mu sync.Mutex
	ran := map[string]int{}
	firstB := make(chan runtime.RunID, 1)
	handlers := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
	spec := fanSpec("fan-fails", 0)
	for _, st := range spec.Steps {
		name := st.Name
		handlers.Steps[name] = func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			mu.Lock()
			ran[name]++
			first := len(ran) == 2
			mu.Unlock()
			if first { // the first b to run holds the slot until the run ends
				firstB <- req.Info.RunID
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return json.RawMessage(`{}`), nil
		}
	}
	wf, err := h.Engine.Register(spec, handlers)
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res *runtime.RunResult
		err error
	}
	done := make(chan outcome, 1)
	go func() { // a driven engine runs steps while a caller waits
		res, err := wf.Run(t.Context(), json.RawMessage(`{}`))
		done <- outcome{res, err}
	}()
	if ok, err := h.Engine.CancelRun(t.Context(), <-firstB); err != nil || !ok {
		t.Fatalf("CancelRun = %v, %v", ok, err)
	}
	got := <-done
	res, err := got.res, got.err
	if res == nil || res.Status != runtime.RunCancelled {
		t.Fatalf("Run = %+v, %v; want the run cancelled", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 || ran["a"] != 1 {
		t.Errorf("steps ran %v, want a and one b, once each", ran)
	}
	cancelled := 0
	for _, b := range []string{"b1", "b2", "b3", "b4"} {
		if trail := h.Trail(res.ID, b); len(trail) > 0 && trail[len(trail)-1] == runtime.EventCancelled {
			cancelled++
		}
	}
	if cancelled != 4 {
		t.Errorf("%d b's cancelled, want 4", cancelled)
	}
}
