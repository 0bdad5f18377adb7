package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// gated is a store whose Finish waits while its gate is shut, and which
// remembers the completions it recorded (Finish returned).
type gated struct {
	store.Store
	mu      sync.Mutex
	open    chan struct{} // closed: Finish goes through
	waiting atomic.Int32  // Finish calls waiting at the gate
	durable map[string]bool
}

func newGated(s store.Store) *gated {
	return &gated{Store: s, open: make(chan struct{}), durable: map[string]bool{}}
}

func (g *gated) Finish(ctx context.Context, r store.Results) (store.FinishResult, error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	g.waiting.Add(1)
	select {
	case <-open:
	case <-ctx.Done():
		g.waiting.Add(-1)
		return store.FinishResult{}, ctx.Err()
	}
	g.waiting.Add(-1)
	res, err := g.Store.Finish(ctx, r)
	if err == nil {
		g.mu.Lock()
		for _, c := range r.Completions {
			g.durable[fmt.Sprint(c.Key.Run, c.Key.Step)] = true
		}
		g.mu.Unlock()
	}
	return res, err
}

func (g *gated) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

func (g *gated) recorded(run runtime.RunID, step int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.durable[fmt.Sprint(run, step)]
}

// slotSteps runs the steps of chainAB: it counts the steps in code at
// once and the a's started, and checks that each b starts only once a's
// completion is recorded.
type slotSteps struct {
	g              *gated
	inCode, most   atomic.Int64
	aRan, bRan     atomic.Int64
	mu             sync.Mutex
	early          []runtime.RunID // b's started before their a was recorded
	retriesOfAgain []int           // Retries seen by the second execution of an a
}

func (s *slotSteps) handlers() runtime.Handlers {
	step := func(name string) runtime.StepFunc {
		return func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			n := s.inCode.Add(1)
			defer s.inCode.Add(-1)
			for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
			}
			switch name {
			case "a":
				s.aRan.Add(1)
				if req.Info.Attempt > 1 {
					s.mu.Lock()
					s.retriesOfAgain = append(s.retriesOfAgain, req.Info.Retries)
					s.mu.Unlock()
				}
			case "b":
				s.bRan.Add(1)
				if !s.g.recorded(req.Info.RunID, 0) {
					s.mu.Lock()
					s.early = append(s.early, req.Info.RunID)
					s.mu.Unlock()
				}
			}
			time.Sleep(2 * time.Millisecond) // so that steps overlap
			return json.RawMessage(`{}`), nil
		}
	}
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{"a": step("a"), "b": step("b")}}
}

var chainAB = &runtime.WorkflowSpec{Name: "ab", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{
	{Name: "a"}, {Name: "b", Parents: []string{"a"}},
}}

const slotConcurrency = 3

// triggerAB starts an engine named worker with Concurrency 3 on g and
// triggers runs of chainAB.
func triggerAB(t *testing.T, g *gated, steps *slotSteps, worker string, runs int) (*runtime.Engine, *runtime.Workflow, []runtime.RunID) {
	t.Helper()
	e := newEngine(t, g, worker, func(c *runtime.Config) { c.Concurrency = slotConcurrency })
	wf, err := e.Register(chainAB, steps.handlers())
	if err != nil {
		t.Fatal(err)
	}
	inputs := make([]json.RawMessage, runs)
	for i := range inputs {
		inputs[i] = json.RawMessage(`{}`)
	}
	refs, err := wf.TriggerMany(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.RunID, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return e, wf, ids
}

func TestSlotsBoundCodeNotResultsMemory(t *testing.T) { testSlotsBoundCode(t, memstore.New()) }

func TestSlotsBoundCodeNotResultsPostgres(t *testing.T) {
	testSlotsBoundCode(t, pgstore.New(pgtest.Pool(t)))
}

// Concurrency bounds the code running at once, not the results waiting
// to be recorded: while no result can be recorded, steps go on running,
// never more than Concurrency at once, until twice Concurrency results
// wait to be recorded and Concurrency more steps that returned wait for
// room, holding their slots; then no step starts. No child starts before
// its parent's completion is recorded.
func testSlotsBoundCode(t *testing.T, s store.Store) {
	g := newGated(s)
	steps := &slotSteps{g: g}
	const bound = 3 * slotConcurrency
	e, wf, ids := triggerAB(t, g, steps, "slots", 4*slotConcurrency)
	eventually(t, fmt.Sprintf("%d a's ran", bound), func() bool { return steps.aRan.Load() >= bound })
	eventually(t, "the a's returned", func() bool { return steps.inCode.Load() == 0 })
	time.Sleep(50 * time.Millisecond) // room for a step too many to start
	if n := steps.aRan.Load(); n != bound {
		t.Errorf("%d a's ran while no result could be recorded, want %d: %d running, %d unrecorded, %d waiting for room", n, bound, slotConcurrency, 2*slotConcurrency, slotConcurrency)
	}
	if n := steps.bRan.Load(); n != 0 {
		t.Errorf("%d b's ran before any a's completion was recorded", n)
	}
	g.release()
	if _, err := wf.WaitMany(waitCtx(t), ids); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := steps.most.Load(); n > slotConcurrency {
		t.Errorf("%d steps ran at once, want at most %d (Concurrency)", n, slotConcurrency)
	}
	if len(steps.early) > 0 {
		t.Errorf("b of runs %v started before a's completion was recorded", steps.early)
	}
	if a, b := steps.aRan.Load(), steps.bRan.Load(); a != int64(len(ids)) || b != int64(len(ids)) {
		t.Errorf("a ran %d times and b %d, want %d each", a, b, len(ids))
	}
}

func TestSlotsStopHandsBackUnrecordedMemory(t *testing.T) {
	testSlotsStopHandsBackUnrecorded(t, memstore.New())
}

func TestSlotsStopHandsBackUnrecordedPostgres(t *testing.T) {
	testSlotsStopHandsBackUnrecorded(t, pgstore.New(pgtest.Pool(t)))
}

// An engine stopped while results wait to be recorded, more of them than
// its Concurrency, hands every such task back: another engine runs each
// again as a new attempt that does not count against its retries, and
// every run completes.
func testSlotsStopHandsBackUnrecorded(t *testing.T, s store.Store) {
	g := newGated(s)
	steps := &slotSteps{g: g}
	const bound = 3 * slotConcurrency
	first, _, ids := triggerAB(t, g, steps, "first", bound)
	eventually(t, fmt.Sprintf("%d a's ran", bound), func() bool { return steps.aRan.Load() >= bound })
	eventually(t, "the a's returned", func() bool { return steps.inCode.Load() == 0 })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := first.Stop(ctx); err == nil {
		t.Fatal("Stop reported a clean drain although no result was recorded")
	}
	g.release()
	second := newEngine(t, g, "second", func(c *runtime.Config) { c.Concurrency = slotConcurrency })
	wf, err := second.Register(chainAB, steps.handlers())
	if err != nil {
		t.Fatal(err)
	}
	start(t, second)
	results, err := wf.WaitMany(waitCtx(t), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Status != runtime.RunCompleted {
			t.Errorf("run %s %s, want COMPLETED", r.ID, r.Status)
		}
	}
	steps.mu.Lock()
	defer steps.mu.Unlock()
	if len(steps.retriesOfAgain) != bound {
		t.Errorf("%d a's ran again, want all %d handed back", len(steps.retriesOfAgain), bound)
	}
	for _, r := range steps.retriesOfAgain {
		if r != 0 {
			t.Errorf("an a handed back unrecorded ran again with %d retries counted, want 0", r)
		}
	}
}
