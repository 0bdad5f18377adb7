package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgxpool schedules a health check that sleeps briefly and may
		// outlive pool.Close by up to 500ms; it is the pool's, not ours.
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).triggerHealthCheck.func1"),
	)
}

// These tests run started engines on real time, with short intervals, on
// each store.

func TestEngineMemory(t *testing.T) {
	runEngineTests(t, func(*testing.T) store.Store { return memstore.New() })
}

func TestEnginePostgres(t *testing.T) {
	runEngineTests(t, func(t *testing.T) store.Store { return pgstore.New(pgtest.Pool(t)) })
}

func runEngineTests(t *testing.T, newStore func(*testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"RunsInBackground", testBackground},
		{"EnginesShareAStore", testSharedStore},
		{"StopDrainsRunningSteps", testStopDrains},
		{"AbandonedStepIsHandedBackOnStop", testHandBackOnStop},
		{"TimersFireAfterLeaderLeaves", testLeaderHandover},
		{"TriggerOnlyEngineClaimsNothing", testTriggerOnly},
		{"UnstorableResultsFailTheirTask", testUnstorable},
		{"RefusedResultDoesNotStallOthers", testRefused},
		{"RefusedStartFailsOnlyItsTask", testRefusedStart},
		{"RefusedFailureEndsWithTheRetryBudget", testRefusedFailure},
		{"LostClaimIsReconciled", testLostClaimIsReconciled},
		{"EarlierProcessLeaseCounts", testEarlierProcessLeaseCounts},
		{"StartFailureHandsBack", testStartFailureHandsBack},
		{"FinishRetried", testFinishRetried},
		{"StopHandsBackUnrecorded", testStopHandsBackUnrecorded},
		{"StaleResultRefused", testStaleResultRefused},
		{"FailedRunResultIsFinal", testFailedRunResultIsFinal},
		{"WaitRidesOutOutage", testWaitRidesOutOutage},
		{"HandedOffTaskWaitingForASlotGoesBack", testHandedOffWaitGoesBack},
		{"WaitManyBlocksUntilEveryRunEnds", testWaitManyBlocks},
		{"WaitManyRidesOutOutage", testWaitManyRidesOutOutage},
		{"TriggerRetriedOnce", testTriggerRetriedOnce},
		{"TriggerManyKeysRace", testTriggerManyKeysRace},
		{"StuckRunIsReported", testStuckRunIsReported},
		{"DeployWaitsForTheFormerVersion", testDeployWaitsForTheFormerVersion},
		{"ServesCompatibleVersions", testServesCompatibleVersions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

// fanSpec is a -> (b1..b4) -> c, with an optional sleep before c.
func fanSpec(name string, nap time.Duration) *runtime.WorkflowSpec {
	spec := &runtime.WorkflowSpec{
		Name:        name,
		InputSchema: `{"type":"object"}`,
		Steps:       []runtime.StepSpec{{Name: "a"}},
	}
	var last []string
	for i := 1; i <= 4; i++ {
		b := fmt.Sprintf("b%d", i)
		spec.Steps = append(spec.Steps, runtime.StepSpec{Name: b, Parents: []string{"a"}})
		last = append(last, b)
	}
	if nap > 0 {
		spec.Steps = append(spec.Steps, runtime.StepSpec{Name: "nap", Parents: last, Sleep: nap})
		last = []string{"nap"}
	}
	spec.Steps = append(spec.Steps, runtime.StepSpec{Name: "c", Parents: last})
	return spec
}

// counter counts executions per run and step.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) handlers(spec *runtime.WorkflowSpec, wrap func(step string, next runtime.StepFunc) runtime.StepFunc) runtime.Handlers {
	h := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
	for _, s := range spec.Steps {
		if s.IsSleep() {
			continue
		}
		step := s.Name
		var fn runtime.StepFunc = func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[req.Info.RunID.String()+"/"+step]++
			c.mu.Unlock()
			return nil, nil
		}
		if wrap != nil {
			fn = wrap(step, fn)
		}
		h.Steps[step] = fn
	}
	return h
}

func (c *counter) exactlyOnce(t *testing.T, runs []runtime.RunID, steps []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range runs {
		for _, s := range steps {
			if n := c.n[id.String()+"/"+s]; n != 1 {
				t.Errorf("run %s step %s ran %d times, want once", id, s, n)
			}
		}
	}
}

func newEngine(t *testing.T, s store.Store, worker string, adjust ...func(*runtime.Config)) *runtime.Engine {
	t.Helper()
	cfg := runtime.Config{
		Store: s, WorkerID: worker, Concurrency: 8, PollInterval: 50 * time.Millisecond,
		TimerInterval: 50 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond, StaleAfter: time.Second,
	}
	for _, a := range adjust {
		a(&cfg)
	}
	e, err := runtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func start(t *testing.T, e *runtime.Engine) {
	t.Helper()
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testBackground(t *testing.T, s store.Store) {
	e := newEngine(t, s, "solo")
	spec := fanSpec("bg", 0)
	var c counter
	w, err := e.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), json.RawMessage(`{}`))
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	c.exactlyOnce(t, []runtime.RunID{res.ID}, []string{"a", "b1", "b2", "b3", "b4", "c"})
}

func testSharedStore(t *testing.T, s store.Store) {
	spec := fanSpec("shared", 0)
	var c counter
	var engines []*runtime.Engine
	var client *runtime.Workflow
	for i := range 3 {
		e := newEngine(t, s, fmt.Sprintf("w%d", i))
		w, err := e.Register(spec, c.handlers(spec, nil))
		if err != nil {
			t.Fatal(err)
		}
		client = w
		engines = append(engines, e)
	}
	for _, e := range engines {
		start(t, e)
	}
	const runs = 60
	ids := make([]runtime.RunID, runs)
	for i := range ids {
		ref, err := client.Trigger(t.Context(), json.RawMessage(`{}`), runtime.WithTenant(fmt.Sprintf("t%d", i%3)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = ref.ID
	}
	for _, id := range ids {
		if res, err := client.Wait(waitCtx(t), id); err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run %s: %v, %v", id, res, err)
		}
	}
	c.exactlyOnce(t, ids, []string{"a", "b1", "b2", "b3", "b4", "c"})
}

func testStopDrains(t *testing.T, s store.Store) {
	e := newEngine(t, s, "drainer")
	spec := &runtime.WorkflowSpec{Name: "slow", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}}}
	entered, release := make(chan struct{}), make(chan struct{})
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			close(entered)
			<-release
			return json.RawMessage(`{"drained":true}`), ctx.Err()
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	stopped := make(chan error)
	go func() { stopped <- e.Stop(waitCtx(t)) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a step was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop = %v", err)
	}
	res, err := e.Result(t.Context(), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted || string(res.Outputs["s"]) != `{"drained":true}` {
		t.Fatalf("after draining: %+v, %v", res, err)
	}
}

func testHandBackOnStop(t *testing.T, s store.Store) {
	spec := &runtime.WorkflowSpec{
		Name: "stuck", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "s", Retry: runtime.RetryPolicy{MaxRetries: 1, InitialDelay: time.Millisecond, BackoffFactor: 1, MaxDelay: time.Millisecond}}},
	}
	var attempts atomic.Int32
	entered := make(chan struct{}, 2)
	handlers := runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			attempts.Add(1)
			entered <- struct{}{}
			if req.Info.Attempt == 1 {
				<-ctx.Done() // the first worker is shut down mid-step
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"by":"second"}`), nil
		},
	}}
	first := newEngine(t, s, "first")
	w, err := first.Register(spec, handlers)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	// Stop gives up on the running step at once and hands the task back,
	// the attempt counting as one that ran.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := first.Stop(ctx); err == nil {
		t.Fatal("Stop with an expired context reported a clean drain")
	}
	second := newEngine(t, s, "second")
	w2, err := second.Register(spec, handlers)
	if err != nil {
		t.Fatal(err)
	}
	start(t, second)
	res, err := w2.Wait(waitCtx(t), ref.ID)
	if err != nil || string(res.Outputs["s"]) != `{"by":"second"}` {
		t.Fatalf("after recovery: %+v, %v", res, err)
	}
	if n := attempts.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	events, _ := second.Events(t.Context(), ref.ID)
	var types []store.EventType
	for _, ev := range events {
		types = append(types, ev.Type)
	}
	want := []store.EventType{store.EventQueued, store.EventStarted, store.EventRetrying, store.EventQueued, store.EventStarted, store.EventCompleted}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", types, want)
	}
	if len(events) > 2 && events[2].Detail != "worker first stopped while the step ran" {
		t.Errorf("RETRYING detail = %q, want the stopped worker named", events[2].Detail)
	}
}

func testLeaderHandover(t *testing.T, s store.Store) {
	// The nap outlasts the time it takes to stop the leader, so that the
	// follower has to fire its timer.
	spec := fanSpec("nap", 2*time.Second)
	var c counter
	leader := newEngine(t, s, "leader")
	w, err := leader.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Let the first engine take leadership, then start a second one.
	eventually(t, "the first engine leads", leader.IsLeader)
	follower := newEngine(t, s, "follower")
	if _, err := follower.Register(spec, c.handlers(spec, nil)); err != nil {
		t.Fatal(err)
	}
	start(t, follower)
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the run sleeps, then stop the leader: the follower must
	// take over and fire the timer.
	eventually(t, "the run sleeps", func() bool {
		res, err := follower.Result(t.Context(), ref.ID)
		return err == nil && res.Steps["nap"] == store.TaskSleeping
	})
	if follower.IsLeader() {
		t.Fatal("two leaders")
	}
	if err := leader.Stop(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := follower.Wait(waitCtx(t), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("after the leader left: %+v, %v", res, err)
	}
	c.exactlyOnce(t, []runtime.RunID{ref.ID}, []string{"a", "c"})
	if !follower.IsLeader() {
		t.Error("the run completed, but the follower does not lead")
	}
}

// eventually polls cond until it holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testTriggerOnly(t *testing.T, s store.Store) {
	spec := fanSpec("elsewhere", 0)
	trigger := newEngine(t, s, "trigger-only")
	w, err := trigger.Workflow(spec)
	if err != nil {
		t.Fatal(err)
	}
	start(t, trigger)
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	res, err := trigger.Result(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps["a"] != store.TaskQueued {
		t.Fatalf("a = %s: an engine without the workflow's code claimed its task", res.Steps["a"])
	}
	// An engine with the code picks it up.
	var c counter
	worker := newEngine(t, s, "worker")
	if _, err := worker.Register(spec, c.handlers(spec, nil)); err != nil {
		t.Fatal(err)
	}
	start(t, worker)
	if res, err := w.Wait(waitCtx(t), ref.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
}

func testUnstorable(t *testing.T, s store.Store) {
	e := newEngine(t, s, "w")
	spec := &runtime.WorkflowSpec{Name: "odd", InputSchema: `{"type":"object","properties":{"mode":{"type":"string"}}}`,
		Steps: []runtime.StepSpec{{Name: "s"}}}
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			if string(req.Input) == `{"mode":"nul"}` {
				return nil, runtime.NonRetryable(errors.New("bad\x00byte \xff here"))
			}
			return json.RawMessage("\"\xff\""), nil // valid JSON syntax, invalid UTF-8
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), json.RawMessage(`{"mode":"nul"}`))
	if !errors.Is(err, runtime.ErrRunFailed) || res.Failure == nil || res.Failure.Error != "badbyte \uFFFD here" {
		t.Errorf("NUL in an error: %+v, %v", res, err)
	}
	res, err = w.Run(waitCtx(t), json.RawMessage(`{"mode":"utf8"}`))
	if !errors.Is(err, runtime.ErrRunFailed) || res.Failure == nil || !strings.Contains(res.Failure.Error, "not valid UTF-8") {
		t.Errorf("invalid UTF-8 output: %+v, %v", res, err)
	}
}

// refusing is a store that refuses to record completions whose output
// says "poison", as a database refuses data it cannot hold; with
// failuresToo, also the failures the engine records for them; and the
// starts of tasks of the runs in starts.
type refusing struct {
	store.Store
	failuresToo bool
	starts      *sync.Map // of runtime.RunID
}

func (r refusing) Finish(ctx context.Context, res store.Results) (store.FinishResult, error) {
	for _, c := range res.Completions {
		if strings.Contains(string(c.Output), "poison") {
			return store.FinishResult{}, fmt.Errorf("test: %w", store.ErrInvalidData)
		}
	}
	for _, f := range res.Failures {
		if r.failuresToo && strings.Contains(f.Error, "refused this task's result") {
			return store.FinishResult{}, fmt.Errorf("test: %w", store.ErrInvalidData)
		}
	}
	return r.Store.Finish(ctx, res)
}

func (r refusing) StartTasks(ctx context.Context, tasks []store.Attempt, now time.Time) error {
	for _, a := range tasks {
		if _, bad := r.starts.Load(a.Key.Run); r.starts != nil && bad {
			return fmt.Errorf("test: %w", store.ErrInvalidData)
		}
	}
	return r.Store.StartTasks(ctx, tasks, now)
}

// testRefusedStart: a task whose start the store refuses fails with the
// reason, and the tasks claimed with it run.
func testRefusedStart(t *testing.T, s store.Store) {
	bad := &sync.Map{}
	tel := newTelemetry(t)
	e := newEngine(t, refusing{Store: s, starts: bad}, "w", tel.configure)
	// skipIf makes the step's start a write of its own (StartTasks).
	spec := &runtime.WorkflowSpec{Name: "starts", InputSchema: `{"type":"object","properties":{"skip":{"type":"boolean"}}}`,
		Steps: []runtime.StepSpec{{Name: "s", SkipIf: []string{"has(input.skip) && input.skip"}}}}
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return json.RawMessage(`"fine"`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := w.TriggerMany(t.Context(), []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{}`), json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	bad.Store(refs[1].ID, true)
	start(t, e)
	for i, ref := range refs {
		res, err := w.Wait(waitCtx(t), ref.ID)
		if i == 1 {
			if !errors.Is(err, runtime.ErrRunFailed) || !strings.Contains(res.Failure.Error, "refused to record the task's start") {
				t.Errorf("refused run: %+v, %v", res, err)
			}
			continue
		}
		if err != nil || string(res.Outputs["s"]) != `"fine"` {
			t.Errorf("run %d: %+v, %v", i, res, err)
		}
	}
	if got := tel.metrics(t).sum(t, "trellis.task.quarantined"); got != 1 {
		t.Errorf("tasks quarantined: %d, want 1", got)
	}
}

// testRefusedFailure: a task whose result and whose failure the store
// both refuse is handed back counted, so that its retry budget ends it
// rather than it running forever.
func testRefusedFailure(t *testing.T, s store.Store) {
	e := newEngine(t, refusing{Store: s, failuresToo: true}, "w")
	spec := &runtime.WorkflowSpec{Name: "doubly", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s",
		Retry: runtime.RetryPolicy{MaxRetries: 1, InitialDelay: time.Millisecond, BackoffFactor: 1, MaxDelay: time.Millisecond}}}}
	var runs atomic.Int32
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`"poison"`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), json.RawMessage(`{}`))
	if !errors.Is(err, runtime.ErrRunFailed) || res == nil {
		t.Fatalf("Run = %+v, %v; want the run failed once its attempts ran out", res, err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the step ran %d times, want 2 (maxRetries 1)", n)
	}
}

// testRefused runs on a started engine and on one run by a Driver (as
// the test kit does): both record results through the same pipeline.
func testRefused(t *testing.T, s store.Store) {
	t.Run("Started", func(t *testing.T) { refused(t, s, false) })
	t.Run("Driven", func(t *testing.T) { refused(t, s, true) })
}

func refused(t *testing.T, s store.Store, driven bool) {
	e := newEngine(t, refusing{Store: s}, fmt.Sprintf("w-%t", driven))
	spec := &runtime.WorkflowSpec{Name: "mixed", InputSchema: `{"type":"object","properties":{"poison":{"type":"boolean"}}}`,
		Steps: []runtime.StepSpec{{Name: "s"}}}
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			if string(req.Input) == `{"poison":true}` {
				return json.RawMessage(`"poison"`), nil
			}
			return json.RawMessage(`"fine"`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	inputs := []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"poison":true}`), json.RawMessage(`{}`)}
	refs, err := w.TriggerMany(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	if driven {
		if _, err := runtime.NewDriver(e); err != nil {
			t.Fatal(err)
		}
	} else {
		start(t, e)
	}
	for i, ref := range refs {
		res, err := w.Wait(waitCtx(t), ref.ID)
		if i == 1 {
			if !errors.Is(err, runtime.ErrRunFailed) || !strings.Contains(res.Failure.Error, "refused this task's result") {
				t.Errorf("poisoned run: %+v, %v", res, err)
			}
			continue
		}
		if err != nil || string(res.Outputs["s"]) != `"fine"` {
			t.Errorf("run %d: %+v, %v", i, res, err)
		}
	}
}

func TestDriverAndStartExcludeEachOther(t *testing.T) {
	e, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewDriver(e); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewDriver(e); err == nil {
		t.Error("a second driver was accepted")
	}
	if err := e.Start(t.Context()); err == nil {
		t.Error("an engine with a driver started")
	}
	started := newEngine(t, memstore.New(), "started")
	start(t, started)
	if _, err := runtime.NewDriver(started); err == nil {
		t.Error("a started engine accepted a driver")
	}
}

// refusingHeartbeats is a store whose heartbeats fail, not transiently,
// until ok is set: an engine cannot start on it.
type refusingHeartbeats struct {
	store.Store
	ok atomic.Bool
}

func (s *refusingHeartbeats) Heartbeat(ctx context.Context, worker string, now time.Time) ([]store.Lease, error) {
	if !s.ok.Load() {
		return nil, errors.New("heartbeats refused")
	}
	return s.Store.Heartbeat(ctx, worker, now)
}

// Start closes registration, once it succeeds: a failed Start leaves the
// engine as it was, registering and startable.
func TestStartClosesRegistration(t *testing.T) {
	s := &refusingHeartbeats{Store: memstore.New()}
	e := newEngine(t, s, "w")
	var c counter
	if _, err := e.Register(fanSpec("before", 0), c.handlers(fanSpec("before", 0), nil)); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "heartbeats refused") {
		t.Fatalf("Start on a store refusing heartbeats: %v", err)
	}
	if _, err := e.Register(fanSpec("after-failed-start", 0), c.handlers(fanSpec("after-failed-start", 0), nil)); err != nil {
		t.Fatalf("Register after a failed Start: %v", err)
	}
	s.ok.Store(true)
	start(t, e)
	if _, err := e.Register(fanSpec("late", 0), c.handlers(fanSpec("late", 0), nil)); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("Register on a started engine: %v", err)
	}
	if err := e.Start(t.Context()); err == nil {
		t.Error("a started engine started again")
	}
	w, err := e.Workflow(fanSpec("after-failed-start", 0))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait(waitCtx(t), ref.ID); err != nil {
		t.Errorf("a run of the workflow registered after the failed Start: %v", err)
	}
}

// A task handed off waits for a slot (see pipeline); when the only slot
// holds a long step, it goes back to the queue after handOffWait (a
// second), and another worker runs it. a's completion hands all four b's
// to first (room for six times Concurrency wait): one takes the slot and
// holds it, the three others go back and run on second.
func testHandedOffWaitGoesBack(t *testing.T, s store.Store) {
	spec := fanSpec("wait-back", 0)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var mu sync.Mutex
	ranBy := map[string][]string{}
	handlers := func(worker string) runtime.Handlers {
		h := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
		for _, st := range spec.Steps {
			name := st.Name
			h.Steps[name] = func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
				mu.Lock()
				ranBy[name] = append(ranBy[name], worker)
				mu.Unlock()
				if worker == "first" && strings.HasPrefix(name, "b") {
					// The b that takes first's only slot holds it.
					entered <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return json.RawMessage(`{}`), nil
			}
		}
		return h
	}
	first := newEngine(t, s, "first", func(c *runtime.Config) { c.Concurrency = 1 })
	w, err := first.Register(spec, handlers("first"))
	if err != nil {
		t.Fatal(err)
	}
	start(t, first)
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	second := newEngine(t, s, "second")
	if _, err := second.Register(spec, handlers("second")); err != nil {
		t.Fatal(err)
	}
	start(t, second)
	// The other three b's run on second: each waited on first for its
	// slot and went back.
	ctx := waitCtx(t)
	for {
		mu.Lock()
		done := 0
		for _, b := range []string{"b1", "b2", "b3", "b4"} {
			if len(ranBy[b]) == 1 && ranBy[b][0] == "second" {
				done++
			}
		}
		mu.Unlock()
		if done == 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the other b's did not run on second: %v", ranBy)
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(release)
	res, err := w.Wait(ctx, ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	events, err := first.Events(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]int{}
	for _, ev := range events {
		if ev.Type == store.EventStarted {
			started[ev.Step]++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	backs := 0
	for _, b := range []string{"b1", "b2", "b3", "b4"} {
		if len(ranBy[b]) != 1 {
			t.Errorf("%s ran %v, want once", b, ranBy[b])
		}
		if started[b] == 2 && ranBy[b][0] == "second" {
			backs++ // handed off to first, given back, claimed by second
		}
	}
	if backs != 3 {
		t.Errorf("%d b's were handed off to first and ran on second, want 3 (STARTED counts %v, ran by %v)", backs, started, ranBy)
	}
}

// testFailedRunResultIsFinal: Run, and Wait after RunNoWait, return a
// failed run's result only once its failure handler has ended, so that
// the result they hand out does not change afterwards, and both return
// the same.
func testFailedRunResultIsFinal(t *testing.T, s store.Store) {
	spec := &runtime.WorkflowSpec{Name: "final", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "a"}}, OnFailure: &runtime.OnFailureSpec{Name: "alert"}}
	e := newEngine(t, s, "w")
	w, err := e.Register(spec, runtime.Handlers{
		Steps: map[string]runtime.StepFunc{"a": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return nil, runtime.NonRetryable(errors.New("no"))
		}},
		OnFailure: func(context.Context, *runtime.FailureRequest) error {
			time.Sleep(200 * time.Millisecond) // the handler takes a while
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), json.RawMessage(`{}`))
	if !errors.Is(err, runtime.ErrRunFailed) || res == nil {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if got := res.Steps["alert"]; got != runtime.TaskCompleted {
		t.Errorf("Run returned the handler %s, want COMPLETED: the result was not final", got)
	}
	ref, err := w.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	waited, err := w.Wait(waitCtx(t), ref.ID)
	if !errors.Is(err, runtime.ErrRunFailed) || waited == nil || waited.Steps["alert"] != runtime.TaskCompleted {
		t.Errorf("Wait = %+v, %v; want the failed run with its handler COMPLETED", waited, err)
	}
	many, err := e.WaitMany(waitCtx(t), []runtime.RunID{res.ID, ref.ID})
	if err != nil || len(many) != 2 || many[0].Steps["alert"] != runtime.TaskCompleted || many[1].Steps["alert"] != runtime.TaskCompleted {
		t.Errorf("WaitMany = %+v, %v", many, err)
	}
}

// A started engine announces the workflow versions it registered, which
// operators read with the workers.
func TestStartAnnouncesVersions(t *testing.T) {
	s := memstore.New()
	e := newEngine(t, s, "announcer")
	var c counter
	var versions []string
	for _, name := range []string{"zeta", "alpha"} {
		w, err := e.Register(fanSpec(name, 0), c.handlers(fanSpec(name, 0), nil))
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, w.Definition().Version())
	}
	start(t, e)
	workers, err := s.ListWorkers(t.Context())
	if err != nil || len(workers) != 1 {
		t.Fatalf("workers = %v, %v", workers, err)
	}
	slices.Sort(versions)
	if !slices.Equal(workers[0].Versions, versions) {
		t.Errorf("the started engine announced %v, want %v", workers[0].Versions, versions)
	}
}
