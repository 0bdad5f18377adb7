package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// flaky wraps a store and injects the failures a lost connection causes:
// an operation that takes effect but whose answer never arrives, or one
// that fails before it is sent. Each counter is how many calls to fail.
type flaky struct {
	store.Store
	loseClaim   atomic.Int32 // claims that take their tasks but answer with an error
	failStart   atomic.Int32 // StartTasks calls that fail
	failFinish  atomic.Int32 // Finish calls that fail (before taking effect)
	loseCreate  atomic.Int32 // CreateRuns calls that take effect but answer with an error
	failGetRun  atomic.Int32 // GetRun calls that fail
	failReads   atomic.Int32 // RunStatuses and GetRuns calls that fail
	failRelease atomic.Int32 // ReleaseTasks calls that fail
}

var errLost = fmt.Errorf("test: connection lost: %w", store.ErrTransient)

func take(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (f *flaky) ClaimTasks(ctx context.Context, p store.Claim) ([]store.ClaimedTask, error) {
	got, err := f.Store.ClaimTasks(ctx, p)
	if err == nil && len(got) > 0 && take(&f.loseClaim) {
		return nil, errLost
	}
	return got, err
}

func (f *flaky) StartTasks(ctx context.Context, tasks []store.Attempt, now time.Time) error {
	if take(&f.failStart) {
		return errLost
	}
	return f.Store.StartTasks(ctx, tasks, now)
}

func (f *flaky) Finish(ctx context.Context, r store.Results) (store.FinishResult, error) {
	if take(&f.failFinish) {
		return store.FinishResult{}, errLost
	}
	return f.Store.Finish(ctx, r)
}

func (f *flaky) CreateRuns(ctx context.Context, p store.CreateRuns) ([]store.CreateRunResult, error) {
	res, err := f.Store.CreateRuns(ctx, p)
	if err == nil && take(&f.loseCreate) {
		return nil, errLost
	}
	return res, err
}

func (f *flaky) RunStatuses(ctx context.Context, ids []runtime.RunID) (map[runtime.RunID]store.RunStatus, error) {
	if take(&f.failReads) {
		return nil, errLost
	}
	return f.Store.RunStatuses(ctx, ids)
}

func (f *flaky) GetRuns(ctx context.Context, ids []runtime.RunID) ([]store.RunWithTasks, error) {
	if take(&f.failReads) {
		return nil, errLost
	}
	return f.Store.GetRuns(ctx, ids)
}

func (f *flaky) GetRun(ctx context.Context, id runtime.RunID) (store.Run, error) {
	if take(&f.failGetRun) {
		return store.Run{}, errLost
	}
	return f.Store.GetRun(ctx, id)
}

func (f *flaky) ReleaseTasks(ctx context.Context, p store.Release) (store.RecoverResult, error) {
	if take(&f.failRelease) {
		return store.RecoverResult{}, errLost
	}
	return f.Store.ReleaseTasks(ctx, p)
}

// gateSpec is a -> b, where b has a condition and so is started by the
// worker (not by its claim).
func gateSpec(name string) *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name: name, InputSchema: `{"type":"object","properties":{"skip":{"type":"boolean"}}}`,
		Steps: []runtime.StepSpec{
			{Name: "a"},
			{Name: "b", Parents: []string{"a"}, SkipIf: []string{"has(input.skip) && input.skip"}},
		},
	}
}

// detailOf returns the details of a run's events of one type and step.
func detailOf(t *testing.T, e *runtime.Engine, id runtime.RunID, step string, typ store.EventType) []string {
	t.Helper()
	events, err := e.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		if ev.Step == step && ev.Type == typ {
			out = append(out, ev.Detail)
		}
	}
	return out
}

func testLostClaimIsReconciled(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	f.loseClaim.Store(1)
	spec := fanSpec("lost-claim", 0)
	var c counter
	e := newEngine(t, f, "w")
	w, err := e.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), nil)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if f.loseClaim.Load() != 0 {
		t.Fatal("no claim answer was lost")
	}
	c.exactlyOnce(t, []runtime.RunID{res.ID}, []string{"a", "b1", "b2", "b3", "b4", "c"})
	// The task whose claim answer was lost was found by reconciliation.
	handedBack := 0
	events, _ := e.Events(t.Context(), res.ID)
	for _, ev := range events {
		if ev.Type == store.EventQueued && ev.Detail == "worker w held the task without running it" {
			handedBack++
		}
	}
	if handedBack == 0 {
		t.Errorf("no task was handed back by reconciliation: %+v", events)
	}
}

func testStartFailureHandsBack(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	f.failStart.Store(1)
	spec := gateSpec("start-fails")
	var c counter
	e := newEngine(t, f, "w")
	w, err := e.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), nil)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	c.exactlyOnce(t, []runtime.RunID{res.ID}, []string{"a", "b"})
	details := detailOf(t, e, res.ID, "b", store.EventQueued)
	if len(details) != 2 || !strings.HasPrefix(details[1], "the worker could not start the task") {
		t.Errorf("b's QUEUED events say %q, want a second one for the hand-back", details)
	}
}

func testFinishRetried(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	f.failFinish.Store(3)
	spec := fanSpec("finish-retried", 0)
	var c counter
	e := newEngine(t, f, "w")
	w, err := e.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	res, err := w.Run(waitCtx(t), nil)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	c.exactlyOnce(t, []runtime.RunID{res.ID}, []string{"a", "b1", "b2", "b3", "b4", "c"})
}

// testStopHandsBackUnrecorded: a worker that cannot record a result before
// its grace period ends gives the task back, and the attempt does not
// count against the retry budget: the step's code ran to completion. The
// second execution is a new attempt all the same, and the event log names
// the attempt whose result it recorded.
func testStopHandsBackUnrecorded(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	spec := &runtime.WorkflowSpec{Name: "unrecorded", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}}}
	var mu sync.Mutex
	var attempts, retries []int
	ran := make(chan struct{}, 2)
	handlers := runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			mu.Lock()
			attempts = append(attempts, req.Info.Attempt)
			retries = append(retries, req.Info.Retries)
			mu.Unlock()
			ran <- struct{}{}
			return json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, req.Info.Attempt)), nil
		},
	}}
	first := newEngine(t, f, "first")
	w, err := first.Register(spec, handlers)
	if err != nil {
		t.Fatal(err)
	}
	f.failFinish.Store(1 << 20) // the database is gone for the first worker
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-ran
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := first.Stop(ctx); err == nil {
		t.Fatal("Stop reported a clean drain although the result was never recorded")
	}
	f.failFinish.Store(0)
	second := newEngine(t, s, "second")
	w2, err := second.Register(spec, handlers)
	if err != nil {
		t.Fatal(err)
	}
	start(t, second)
	res, err := w2.Wait(waitCtx(t), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 2]" || fmt.Sprint(retries) != "[0 0]" {
		t.Errorf("attempts seen by the code = %v with retries %v, want [1 2] and [0 0]: each execution is an attempt of its own, and a hand-back does not count against the budget", attempts, retries)
	}
	checkAttemptTruth(t, second, ref.ID, map[string][]int{"s": attempts})
	if out := string(res.Outputs["s"]); out != `{"attempt":2}` {
		t.Errorf("s's output = %s, want attempt 2's", out)
	}
	details := detailOf(t, second, ref.ID, "s", store.EventQueued)
	if len(details) != 2 || details[1] != "worker first stopped before the task's result was recorded" {
		t.Errorf("QUEUED details = %q", details)
	}
}

func testWaitRidesOutOutage(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	spec := fanSpec("wait-outage", 0)
	var c counter
	e := newEngine(t, f, "w")
	w, err := e.Register(spec, c.handlers(spec, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.failGetRun.Store(5)
	start(t, e)
	res, err := w.Wait(waitCtx(t), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if f.failGetRun.Load() != 0 {
		t.Errorf("%d injected failures left unused", f.failGetRun.Load())
	}
}

func testTriggerRetriedOnce(t *testing.T, s store.Store) {
	f := &flaky{Store: s}
	e := newEngine(t, f, "w")
	w, err := e.Workflow(fanSpec("trigger-retried", 0))
	if err != nil {
		t.Fatal(err)
	}
	f.loseCreate.Store(1)
	refs, err := w.TriggerMany(t.Context(), []json.RawMessage{nil, nil, nil})
	if err != nil {
		t.Fatal(err)
	}
	if f.loseCreate.Load() != 0 {
		t.Fatal("no answer was lost")
	}
	for _, ref := range refs {
		if ref.Existing {
			t.Errorf("run %s reported as existing: the retry found the runs its first try created", ref.ID)
		}
		if _, err := e.Result(t.Context(), ref.ID); err != nil {
			t.Errorf("run %s: %v", ref.ID, err)
		}
	}
	// Claiming finds exactly one root per run: nothing was created twice.
	claimed, err := s.ClaimTasks(t.Context(), store.Claim{Worker: "probe", Limit: 100, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 3 {
		t.Errorf("claimed %d roots, want 3", len(claimed))
	}
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testStuckRunIsReported(t *testing.T, s store.Store) {
	var logs syncBuffer
	spec := &runtime.WorkflowSpec{Name: "hangs", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}, {Name: "t", Parents: []string{"s"}}}}
	release, started := make(chan struct{}), make(chan struct{})
	var startedOnce sync.Once
	e := newEngine(t, s, "w", func(c *runtime.Config) {
		c.StuckAfter = 300 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			startedOnce.Do(func() { close(started) })
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		},
		"t": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// A loaded machine may first see the step queued too long: wait for
	// the line that reports it running.
	deadline := time.Now().Add(20 * time.Second)
	var line string
	for line == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no stuck running step logged; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "run making no progress") && strings.Contains(l, "s RUNNING since") {
				line = l
				break
			}
		}
	}
	for _, want := range []string{"run_id=" + ref.ID.String(), "workflow=hangs", "on worker w"} {
		if !strings.Contains(line, want) {
			t.Errorf("stuck log line %q lacks %q", line, want)
		}
	}
	runs, err := e.StuckRuns(t.Context())
	if err != nil || len(runs) != 1 || runs[0].ID != ref.ID || len(runs[0].Tasks) != 1 || runs[0].Tasks[0].Step != "s" || runs[0].Tasks[0].Worker != "w" {
		t.Errorf("StuckRuns = %+v, %v", runs, err)
	}
	close(release)
	if res, err := w.Wait(waitCtx(t), ref.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if runs, _ := e.StuckRuns(t.Context()); len(runs) != 0 {
		t.Errorf("StuckRuns after completion = %+v", runs)
	}
}

// testEarlierProcessLeaseCounts: a worker restarted under the same id
// finds the leases its earlier process died holding. Their code may have
// run, so handing them back counts against the retry budget, as a dead worker's
// tasks do; otherwise a step that crashes its process would run forever.
func testEarlierProcessLeaseCounts(t *testing.T, s store.Store) {
	spec := &runtime.WorkflowSpec{Name: "restarted", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "a",
		Retry: runtime.RetryPolicy{MaxRetries: 1, InitialDelay: time.Millisecond, BackoffFactor: 1, MaxDelay: time.Millisecond}}}}
	var attempts []int
	var mu sync.Mutex
	e := newEngine(t, s, "w")
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"a": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			info, _ := runtime.InfoFromContext(ctx)
			mu.Lock()
			attempts = append(attempts, info.Attempt)
			mu.Unlock()
			return nil, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	// The earlier process claimed the task a minute ago, then died.
	claimed, err := s.ClaimTasks(t.Context(), store.Claim{Worker: "w", Versions: []string{w.Definition().Version()}, Limit: 1, Now: time.Now().Add(-time.Minute)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	start(t, e)
	res, err := w.Wait(waitCtx(t), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 1 || attempts[0] != 2 {
		t.Errorf("a ran as attempts %v, want [2]: the earlier process's attempt counts", attempts)
	}
	events, _ := e.Events(t.Context(), ref.ID)
	found := false
	for _, ev := range events {
		found = found || strings.Contains(ev.Detail, "an earlier process of worker w died holding the task")
	}
	if !found {
		t.Errorf("no event says why the task was handed back: %+v", events)
	}
}

// checkAttemptTruth checks a run's event log against the attempts whose
// code ran (step -> the attempts its code saw): each attempt that ran has
// a STARTED event, and every result (COMPLETED, FAILED, RETRYING,
// TIMED_OUT) names an attempt that ran.
func checkAttemptTruth(t *testing.T, e *runtime.Engine, id runtime.RunID, ran map[string][]int) {
	t.Helper()
	events, err := e.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]map[int]bool{}
	for _, ev := range events {
		if ev.Type == store.EventStarted {
			if started[ev.Step] == nil {
				started[ev.Step] = map[int]bool{}
			}
			started[ev.Step][ev.Attempt] = true
		}
	}
	for step, attempts := range ran {
		for _, a := range attempts {
			if !started[step][a] {
				t.Errorf("step %s ran as attempt %d, which has no STARTED event: %+v", step, a, events)
			}
		}
	}
	for _, ev := range events {
		attempts, code := ran[ev.Step]
		if !code {
			continue
		}
		switch ev.Type {
		case store.EventCompleted, store.EventFailed, store.EventRetrying, store.EventTimedOut:
			if !slices.Contains(attempts, ev.Attempt) {
				t.Errorf("step %s: %s names attempt %d, but the attempts that ran are %v", ev.Step, ev.Type, ev.Attempt, attempts)
			}
		}
	}
}

// testStaleResultRefused: a result that arrives after its attempt lost
// the task (here handed back behind the engine's back, as a recovery or a
// reconciliation would) is refused and counted, and the task's next
// attempt is the one the event log records, with its own output.
func testStaleResultRefused(t *testing.T, s store.Store) {
	spec := &runtime.WorkflowSpec{Name: "stale", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}}}
	var mu sync.Mutex
	var attempts []int
	running, proceed := make(chan runtime.StepInfo, 2), make(chan struct{})
	tel := newTelemetry(t)
	// Heartbeats far apart, so that the engine learns that it lost the task
	// only from the store's answer to its result.
	e := newEngine(t, s, "w", tel.configure, func(c *runtime.Config) { c.HeartbeatInterval, c.StaleAfter = time.Minute, 2*time.Minute })
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			mu.Lock()
			attempts = append(attempts, req.Info.Attempt)
			mu.Unlock()
			if req.Info.Attempt == 1 {
				running <- req.Info
				<-proceed
			}
			return json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, req.Info.Attempt)), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	ref, err := w.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	info := <-running
	released, err := s.ReleaseTasks(t.Context(), store.Release{Worker: "w", Reason: "taken over by the test",
		Attempts: []store.Attempt{{Key: store.TaskKey{Run: ref.ID, Step: 0}, Attempt: info.Attempt}}, Now: time.Now()})
	if err != nil || len(released.Requeued) != 1 {
		t.Fatalf("ReleaseTasks = %+v, %v", released, err)
	}
	close(proceed)
	res, err := w.Wait(waitCtx(t), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if out := string(res.Outputs["s"]); out != `{"attempt":2}` {
		t.Errorf("s's output = %s, want attempt 2's: attempt 1's result came after it lost the task", out)
	}
	mu.Lock()
	defer mu.Unlock()
	checkAttemptTruth(t, e, ref.ID, map[string][]int{"s": attempts})
	// Attempt 2 may complete the run before the test lets attempt 1 return:
	// the stale result is then recorded after Wait returned.
	waitFor(t, "the stale result to be counted", func() bool {
		_, ok := tel.metrics(t)["trellis.task.stale_results"]
		return ok
	})
	if got := tel.metrics(t).sum(t, "trellis.task.stale_results"); got != 1 {
		t.Errorf("stale results counted: %d, want 1", got)
	}
}
