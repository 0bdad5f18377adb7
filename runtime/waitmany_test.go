package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// testWaitMany (acceptance): WaitMany returns the results of runs of two
// workflows that end at different times, in the order asked. On the test
// kit's driven engine it runs what can run now and returns every run's
// state, with ErrStillRunning while some wait on time.
func testWaitMany(t *testing.T, newH newHarness) {
	h := newH(t)
	ops := registerOps(t, h, &opsSteps{failUntil: 2})
	sleeps, err := wf.RegisterSleeps(h.Engine, &sleepSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	id := func(ref runtime.RunRef, err error) runtime.RunID {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	day := id(sleeps.RunNoWait(ctx, wf.SleepsInput{}))                       // ends after 24h
	flaky := id(ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeFlaky})) // its retry is due after 30s
	ok := id(ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeOk}))       // ends at once
	fatal := id(ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeFatal})) // fails at once
	dropped := id(sleeps.RunNoWait(ctx, wf.SleepsInput{}))                   // cancelled after an hour
	ids := []runtime.RunID{day, flaky, ok, fatal, dropped, ok}

	check := func(when string, running bool, want ...runtime.RunStatus) []*runtime.RunResult {
		t.Helper()
		results, err := h.Engine.WaitMany(ctx, ids)
		switch {
		case running && (!errors.Is(err, runtime.ErrStillRunning) || !strings.Contains(err.Error(), day.String())):
			t.Fatalf("%s: WaitMany error = %v; want ErrStillRunning naming run %s", when, err, day)
		case !running && err != nil:
			t.Fatalf("%s: WaitMany error = %v", when, err)
		case len(results) != len(ids):
			t.Fatalf("%s: %d results for %d ids", when, len(results), len(ids))
		}
		got := make([]runtime.RunStatus, len(results))
		for i, r := range results {
			if r.ID != ids[i] {
				t.Errorf("%s: result %d is run %s, want %s", when, i, r.ID, ids[i])
			}
			got[i] = r.Status
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: statuses (-want +got):\n%s", when, diff)
		}
		return results
	}
	const R, C, F, X = runtime.RunRunning, runtime.RunCompleted, runtime.RunFailed, runtime.RunCancelled
	check("at once", true, R, R, C, F, R, C)
	h.Advance(30 * time.Second)
	check("after 30s", true, R, C, C, F, R, C)
	h.Advance(time.Hour)
	if _, err := h.Engine.CancelRun(ctx, dropped); err != nil {
		t.Fatal(err)
	}
	check("after the cancel", true, R, C, C, F, X, C)
	h.Advance(24 * time.Hour)
	results := check("after a day", false, C, C, C, F, X, C)

	// Each result says how its run ended, as Wait's does.
	if work, done, err := runtime.Output(results[1], wf.OpsRefs.Work()); err != nil || !done || work.Attempt != 2 {
		t.Errorf("flaky run's work = %+v, %v, %v; want its second attempt's output", work, done, err)
	}
	var rf *runtime.RunFailedError
	if err := results[3].Err(); !errors.As(err, &rf) || rf.Step != "work" || rf.Message != "card declined" {
		t.Errorf("fatal run's Err = %v; want work's failure", err)
	}
	if err := results[4].Err(); !errors.Is(err, runtime.ErrRunCancelled) {
		t.Errorf("cancelled run's Err = %v", err)
	}
	// A workflow's handle waits the same way.
	both, err := ops.Workflow().WaitMany(ctx, []runtime.RunID{ok, flaky})
	if err != nil || len(both) != 2 || both[0].ID != ok || both[1].ID != flaky {
		t.Errorf("Workflow.WaitMany = %+v, %v", both, err)
	}
	// So does the generated client, with typed results that say how each
	// run ended.
	typed, err := ops.WaitMany(ctx, []runtime.RunID{flaky, fatal})
	switch {
	case err != nil || len(typed) != 2:
		t.Errorf("OpsClient.WaitMany = %+v, %v", typed, err)
	case typed[0].Status != C || typed[0].Work == nil || typed[0].Work.Attempt != 2:
		t.Errorf("flaky run, typed: %+v; want completed with its second attempt's output", typed[0])
	case typed[1].Status != F || typed[1].Failure == nil || typed[1].Failure.Step != "work" || typed[1].Work != nil:
		t.Errorf("fatal run, typed: %+v; want failed at work, without its output", typed[1])
	}
	// An unknown id is named; no ids is no results.
	unknown := uuid.Must(uuid.NewV7())
	if _, err := h.Engine.WaitMany(ctx, []runtime.RunID{ok, unknown}); !errors.Is(err, runtime.ErrRunNotFound) || !strings.Contains(err.Error(), unknown.String()) {
		t.Errorf("WaitMany with an unknown id = %v; want ErrRunNotFound naming %s", err, unknown)
	}
	if got, err := h.Engine.WaitMany(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("WaitMany(nil) = %v, %v", got, err)
	}
}

// testWaitManyBlocks (engine, real time): an engine that only triggers
// runs waits for runs another engine executes, ending at different
// times, one of them cancelled by the other engine while it waits.
func testWaitManyBlocks(t *testing.T, s store.Store) {
	fast, napping, long := fanSpec("wm-fast", 0), fanSpec("wm-nap", 300*time.Millisecond), fanSpec("wm-long", time.Hour)
	failing := &runtime.WorkflowSpec{Name: "wm-fail", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}}}
	worker := newEngine(t, s, "worker")
	var c counter
	for _, spec := range []*runtime.WorkflowSpec{fast, napping, long} {
		if _, err := worker.Register(spec, c.handlers(spec, nil)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := worker.Register(failing, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return nil, runtime.NonRetryable(errors.New("refused"))
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	waiter := newEngine(t, s, "waiter")
	start(t, waiter) // it runs no steps, but listens for runs ending
	var ids []runtime.RunID
	want := map[runtime.RunID]runtime.RunStatus{}
	var longID runtime.RunID
	for _, tr := range []struct {
		spec   *runtime.WorkflowSpec
		n      int
		status runtime.RunStatus
	}{{napping, 4, runtime.RunCompleted}, {failing, 3, runtime.RunFailed}, {long, 1, runtime.RunCancelled}, {fast, 4, runtime.RunCompleted}} {
		w, err := waiter.Workflow(tr.spec)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := w.TriggerMany(t.Context(), make([]json.RawMessage, tr.n))
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
			ids = append(ids, ref.ID)
			want[ref.ID] = tr.status
			if tr.spec == long {
				longID = ref.ID
			}
		}
	}
	var results []*runtime.RunResult
	done := make(chan error)
	go func() {
		var err error
		results, err = waiter.WaitMany(waitCtx(t), ids)
		done <- err
	}()
	start(t, worker)
	eventually(t, "the long run sleeps", func() bool {
		res, err := worker.Result(t.Context(), longID)
		return err == nil && res.Steps["nap"] == store.TaskSleeping
	})
	select {
	case err := <-done:
		t.Fatalf("WaitMany returned (%v) while a run was sleeping", err)
	default:
	}
	if _, err := worker.CancelRun(t.Context(), longID); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitMany = %v", err)
	}
	for i, res := range results {
		if res == nil || res.ID != ids[i] || res.Status != want[ids[i]] {
			t.Errorf("result %d = %+v; want run %s %s", i, res, ids[i], want[ids[i]])
		}
	}
}

// testWaitManyRidesOutOutage: reads that fail transiently (the database
// restarting) are made again; WaitMany returns once the runs ended.
func testWaitManyRidesOutOutage(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	spec := fanSpec("wait-many-outage", 0)
	var c counter
	e := newEngine(t, f, "w")
	w, err := e.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	refs, err := w.TriggerMany(t.Context(), make([]json.RawMessage, 5))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.RunID, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	f.failReads.Store(5)
	start(t, e)
	results, err := w.WaitMany(waitCtx(t), ids)
	if err != nil {
		t.Fatalf("WaitMany = %v", err)
	}
	for i, res := range results {
		if res.ID != ids[i] || res.Status != runtime.RunCompleted {
			t.Errorf("result %d = %+v", i, res)
		}
	}
	if n := f.failReads.Load(); n != 0 {
		t.Errorf("%d injected failures left unused", n)
	}
}

// A waiting engine's reads of 10,000 runs (memory) and of 2,000 runs
// (Postgres) that end while it waits.
func TestWaitManyMemory(t *testing.T) { waitForMany(t, memstore.New(), 10_000) }

func TestWaitManyPostgres(t *testing.T) { waitForMany(t, pgstore.New(pgtest.Pool(t)), 2_000) }

// doubleSpec doubles its input, refusing multiples of 7.
var doubleSpec = &runtime.WorkflowSpec{
	Name:        "double",
	InputSchema: `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`,
	Steps:       []runtime.StepSpec{{Name: "double", OutputSchema: `{"type":"object","required":["doubled"],"properties":{"doubled":{"type":"integer"}}}`}},
}

func double(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
	var in struct{ N int }
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, err
	}
	if in.N%7 == 0 {
		return nil, runtime.NonRetryable(fmt.Errorf("%d is a multiple of 7", in.N))
	}
	return json.Marshal(map[string]int{"doubled": 2 * in.N})
}

// waitForMany has an engine that executes nothing wait for n runs that
// another engine starts executing once the wait has begun, and checks
// every result, and that the waiting engine read each run's result once,
// in batches, and no run on its own.
func waitForMany(t *testing.T, s store.Store, n int) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	reads := &readCounter{Store: s, started: make(chan struct{}), results: map[runtime.RunID]int{}}
	waiter := newEngine(t, reads, "waiter")
	start(t, waiter)
	w, err := waiter.Workflow(doubleSpec)
	if err != nil {
		t.Fatal(err)
	}
	inputs := make([]json.RawMessage, n)
	for i := range inputs {
		inputs[i] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
	}
	refs, err := w.TriggerMany(ctx, inputs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.RunID, n)
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	var results []*runtime.RunResult
	done := make(chan error)
	go func() {
		var err error
		results, err = waiter.WaitMany(ctx, ids)
		done <- err
	}()
	<-reads.started
	worker := newEngine(t, s, "worker", func(c *runtime.Config) { c.Concurrency = 64 })
	if _, err := worker.Register(doubleSpec, runtime.Handlers{Steps: map[string]runtime.StepFunc{"double": double}}); err != nil {
		t.Fatal(err)
	}
	start(t, worker)
	if err := <-done; err != nil {
		t.Fatalf("WaitMany = %v", err)
	}
	for i, res := range results {
		switch {
		case res == nil || res.ID != ids[i]:
			t.Fatalf("result %d = %+v, want run %s", i, res, ids[i])
		case i%7 == 0:
			if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "double" || res.Failure.Error != fmt.Sprintf("%d is a multiple of 7", i) {
				t.Errorf("run %d = %s %+v; want failed by double", i, res.Status, res.Failure)
			}
		default:
			if res.Status != runtime.RunCompleted || string(res.Outputs["double"]) != fmt.Sprintf(`{"doubled":%d}`, 2*i) {
				t.Errorf("run %d = %s %s; want completed, doubled %d", i, res.Status, res.Outputs["double"], 2*i)
			}
		}
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	if reads.perRun != 0 {
		t.Errorf("the waiting engine read runs one by one %d times", reads.perRun)
	}
	if reads.mostStatuses > 5000 || reads.mostResults > 500 {
		t.Errorf("reads of up to %d statuses and %d results at once; want at most 5,000 and 500", reads.mostStatuses, reads.mostResults)
	}
	for _, id := range ids {
		if k := reads.results[id]; k != 1 {
			t.Errorf("run %s's result was read %d times, want once", id, k)
		}
	}
	t.Logf("%d runs: %d status reads, %d result reads", n, reads.statusCalls, reads.resultCalls)
}

// readCounter counts how an engine reads runs from its store.
type readCounter struct {
	store.Store
	started chan struct{} // closed at the first RunStatuses call
	once    sync.Once

	mu                        sync.Mutex
	perRun                    int // GetRun and ListTasks calls
	statusCalls, resultCalls  int
	mostStatuses, mostResults int
	results                   map[runtime.RunID]int // runs read by GetRuns, and how often
}

func (r *readCounter) RunStatuses(ctx context.Context, ids []runtime.RunID) (map[runtime.RunID]store.RunStatus, error) {
	r.once.Do(func() { close(r.started) })
	r.mu.Lock()
	r.statusCalls++
	r.mostStatuses = max(r.mostStatuses, len(ids))
	r.mu.Unlock()
	return r.Store.RunStatuses(ctx, ids)
}

func (r *readCounter) GetRuns(ctx context.Context, ids []runtime.RunID) ([]store.RunWithTasks, error) {
	runs, err := r.Store.GetRuns(ctx, ids)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resultCalls++
	r.mostResults = max(r.mostResults, len(ids))
	for _, run := range runs {
		r.results[run.ID]++
	}
	return runs, err
}

func (r *readCounter) GetRun(ctx context.Context, id runtime.RunID) (store.Run, error) {
	r.mu.Lock()
	r.perRun++
	r.mu.Unlock()
	return r.Store.GetRun(ctx, id)
}

func (r *readCounter) ListTasks(ctx context.Context, id runtime.RunID) ([]store.Task, error) {
	r.mu.Lock()
	r.perRun++
	r.mu.Unlock()
	return r.Store.ListTasks(ctx, id)
}
