package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Run deadlines (the workflow's timeout field, WithTimeout) and delayed
// starts (WithStartAt, WithStartAfter), end to end on a virtual clock,
// against each store.

func TestDeadlinesMemory(t *testing.T) {
	runDeadlines(t, memoryHarness)
}

func TestDeadlinesPostgres(t *testing.T) {
	runDeadlines(t, postgresHarness)
}

func runDeadlines(t *testing.T, newH newHarness) {
	tests := []struct {
		name string
		fn   func(*testing.T, newHarness)
	}{
		{"StopsRunningStep", testDeadlineStopsRunningStep},
		{"DuringSleep", testDeadlineDuringSleep},
		{"NotReached", testDeadlineNotReached},
		{"NegativeTimeoutRefused", testDeadlineNegative},
		{"DelayedStart", testDelayedStart},
		{"DelayedRunCancelledBeforeItStarts", testDelayedCancel},
		{"DeadlineCountsFromTheDelayedStart", testDelayedDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newH) })
	}
}

// deadlineSteps is the code of the deadlines workflow.
type deadlineSteps struct {
	calls     calls
	started   chan struct{} // receives when work starts blocking, if set
	sawCancel chan error    // receives the cause when work sees its context end
	mu        sync.Mutex
	failures  []runtime.Failure
}

func (s *deadlineSteps) Work(ctx context.Context, in wf.DeadlinesInput) error {
	s.calls.add("work")
	if in.Mode != wf.DeadlinesInputModeBlock {
		return nil
	}
	s.started <- struct{}{}
	<-ctx.Done()
	s.sawCancel <- context.Cause(ctx)
	return ctx.Err()
}

func (s *deadlineSteps) Done(context.Context, wf.DeadlinesInput, wf.DeadlinesDoneParents) error {
	s.calls.add("done")
	return nil
}

func (s *deadlineSteps) Alert(_ context.Context, _ wf.DeadlinesInput, f runtime.Failure) error {
	s.calls.add("alert")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
	return nil
}

func registerDeadlines(t *testing.T, h *trellistest.Harness, s *deadlineSteps) *wf.DeadlinesClient {
	t.Helper()
	client, err := wf.RegisterDeadlines(h.Engine, s)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// checkDeadlineFailure checks that run id failed at its deadline of
// timeout, reached at at, and that the failure handler saw it.
func checkDeadlineFailure(t *testing.T, h *trellistest.Harness, s *deadlineSteps, id runtime.RunID, timeout string, at time.Time) {
	t.Helper()
	res := h.Result(id)
	if res.Status != runtime.RunFailed {
		t.Fatalf("run = %s, want FAILED", res.Status)
	}
	want := "run deadline of " + timeout + " passed"
	err := res.Err()
	var failed *runtime.RunFailedError
	if !errors.As(err, &failed) || !failed.Deadline || failed.Message != want || failed.Step != "" {
		t.Errorf("Err = %#v, want a RunFailedError of the deadline saying %q", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, runtime.ErrRunFailed) {
		t.Errorf("Err = %v: want it to match context.DeadlineExceeded and ErrRunFailed", err)
	}
	run, gerr := h.Store.GetRun(t.Context(), id)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if run.Failure == nil || *run.Failure != (store.RunFailure{StepIndex: -1, Error: want}) {
		t.Errorf("stored failure = %+v, want the deadline's", run.Failure)
	}
	if !run.FinishedAt.Equal(at) {
		t.Errorf("run finished at %s, want %s (its deadline)", run.FinishedAt, at)
	}
	h.Settle()
	if n := s.calls.count("alert"); n != 1 {
		t.Fatalf("onFailure ran %d times, want once", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.failures[0]; got != (runtime.Failure{StepIndex: -1, Error: want}) {
		t.Errorf("onFailure saw %+v, want the deadline with no step", got)
	}
}

// A step blocked at the deadline has its context cancelled; the run
// fails with the reason; WithTimeout longer than the workflow's timeout
// does not lengthen it.
func testDeadlineStopsRunningStep(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deadlineSteps{started: make(chan struct{}, 1), sawCancel: make(chan error, 1)}
	client := registerDeadlines(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.DeadlinesInput{Mode: wf.DeadlinesInputModeBlock}, runtime.WithTimeout(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	run, err := h.Store.GetRun(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := h.Start.Add(time.Hour)
	if !run.Deadline.Equal(deadline) {
		t.Errorf("deadline = %s, want %s: WithTimeout only shortens the workflow's timeout", run.Deadline, deadline)
	}
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		h.RunUntilIdle()
	}()
	<-steps.started
	h.Clock.Set(h.Start.Add(59 * time.Minute))
	select {
	case cause := <-steps.sawCancel:
		t.Fatalf("work's context ended at 59m, before the deadline: %v", cause)
	case <-time.After(50 * time.Millisecond):
	}
	h.Clock.Set(deadline)
	cause := <-steps.sawCancel
	<-idle
	if !errors.Is(cause, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(cause), "run deadline of 1h passed") {
		t.Errorf("work's context ended with %v, want the run's deadline (context.DeadlineExceeded)", cause)
	}
	checkTrail(t, h, ref.ID, "work", trail(queued, started, cancelled))
	for _, ev := range h.Events(ref.ID) {
		if ev.Step == "work" && ev.Type == cancelled && ev.Detail != store.DeadlineDetail {
			t.Errorf("work's CANCELLED event says %q, want %q", ev.Detail, store.DeadlineDetail)
		}
	}
	checkDeadlineFailure(t, h, steps, ref.ID, "1h", deadline)
	checkSteps(t, h, ref.ID, map[string]runtime.TaskStatus{
		"work": runtime.TaskCancelled, "nap": runtime.TaskCancelled, "done": runtime.TaskCancelled, "alert": runtime.TaskCompleted,
	})
}

// A deadline shortened by WithTimeout passes while the run sleeps.
func testDeadlineDuringSleep(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deadlineSteps{}
	client := registerDeadlines(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick}, runtime.WithTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(9 * time.Minute)
	if res := h.Result(ref.ID); res.Status != runtime.RunRunning {
		t.Fatalf("run = %s at 9m, want RUNNING", res.Status)
	}
	h.Advance(time.Minute)
	checkTrail(t, h, ref.ID, "nap", trail(queued, sleeping, cancelled))
	checkDeadlineFailure(t, h, steps, ref.ID, "10m", h.Start.Add(10*time.Minute))
	if n := steps.calls.count("done"); n != 0 {
		t.Errorf("done ran %d times after the deadline", n)
	}
}

// A run that completes before its deadline is left as it is when the
// deadline comes.
func testDeadlineNotReached(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deadlineSteps{}
	client := registerDeadlines(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick})
	if err != nil {
		t.Fatal(err)
	}
	if moved := h.Settle(); moved < time.Hour {
		t.Errorf("the clock moved %s, want past the deadline (1h)", moved)
	}
	res := h.Result(ref.ID)
	if res.Status != runtime.RunCompleted {
		t.Fatalf("run = %s, want COMPLETED", res.Status)
	}
	if n := steps.calls.count("alert"); n != 0 {
		t.Errorf("onFailure ran %d times for a completed run", n)
	}
	if _, ok, err := h.Store.NextTimer(t.Context()); err != nil || ok {
		t.Errorf("NextTimer = %v, %v after the deadline fired, want none", ok, err)
	}
}

func testDeadlineNegative(t *testing.T, newH newHarness) {
	h := newH(t)
	client := registerDeadlines(t, h, &deadlineSteps{})
	_, err := client.RunNoWait(t.Context(), wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick}, runtime.WithTimeout(-time.Second))
	if err == nil {
		t.Fatal("WithTimeout(-1s) accepted")
	}
}

// A delayed run exists at once, runs nothing before it is due, is found
// again by its idempotency key, and starts when due.
func testDelayedStart(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deadlineSteps{}
	client := registerDeadlines(t, h, steps)
	in := wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick}
	ref, err := client.RunNoWait(t.Context(), in, runtime.WithStartAfter(time.Hour), runtime.WithIdempotencyKey("nightly"))
	if err != nil {
		t.Fatal(err)
	}
	startAt := h.Start.Add(time.Hour)
	run, err := h.Store.GetRun(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunRunning || !run.StartAt.Equal(startAt) || !run.Scheduled(h.Now()) || !run.Deadline.IsZero() {
		t.Errorf("run = %s starting %s (scheduled %v), deadline %s; want RUNNING, scheduled for %s, no deadline yet",
			run.Status, run.StartAt, run.Scheduled(h.Now()), run.Deadline, startAt)
	}
	h.Advance(59 * time.Minute)
	if n := len(steps.calls.list()); n != 0 {
		t.Fatalf("%d steps ran before the run's start", n)
	}
	checkSteps(t, h, ref.ID, map[string]runtime.TaskStatus{
		"work": runtime.TaskPending, "nap": runtime.TaskPending, "done": runtime.TaskPending, "alert": runtime.TaskPending,
	})
	again, err := client.RunNoWait(t.Context(), in, runtime.WithStartAfter(time.Hour), runtime.WithIdempotencyKey("nightly"))
	if err != nil || again.ID != ref.ID || !again.Existing {
		t.Fatalf("the second trigger = %+v, %v; want the first run", again, err)
	}
	h.Advance(time.Minute)
	if n := steps.calls.count("work"); n != 1 {
		t.Fatalf("work ran %d times at the start, want once", n)
	}
	if got := h.Times(ref.ID, "work", queued); len(got) != 1 || got[0] != time.Hour {
		t.Errorf("work queued at %v, want at the start (1h)", got)
	}
	if run, err = h.Store.GetRun(t.Context(), ref.ID); err != nil {
		t.Fatal(err)
	}
	if !run.Deadline.Equal(startAt.Add(time.Hour)) {
		t.Errorf("deadline = %s, want the workflow's timeout (1h) from the start, %s", run.Deadline, startAt.Add(time.Hour))
	}
	h.Settle()
	res := h.Result(ref.ID)
	if res.Status != runtime.RunCompleted {
		t.Fatalf("run = %s, want COMPLETED", res.Status)
	}
	if n := steps.calls.count("work"); n != 1 {
		t.Errorf("work ran %d times, want once", n)
	}
}

// A delayed run cancelled before its start never runs.
func testDelayedCancel(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deadlineSteps{}
	client := registerDeadlines(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick}, runtime.WithStartAt(h.Start.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(30 * time.Minute)
	if _, err := h.Engine.CancelRun(t.Context(), ref.ID); err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if res := h.Result(ref.ID); res.Status != runtime.RunCancelled {
		t.Fatalf("run = %s, want CANCELLED", res.Status)
	}
	if got := steps.calls.list(); len(got) != 0 {
		t.Errorf("steps %v ran for a run cancelled before its start", got)
	}
	checkTrail(t, h, ref.ID, "work", trail(cancelled))
}

// A delayed run's deadline counts from its start, not its trigger.
func testDelayedDeadline(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deadlineSteps{}
	client := registerDeadlines(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.DeadlinesInput{Mode: wf.DeadlinesInputModeQuick},
		runtime.WithStartAfter(2*time.Hour), runtime.WithTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(2*time.Hour + 9*time.Minute)
	if res := h.Result(ref.ID); res.Status != runtime.RunRunning || steps.calls.count("work") != 1 {
		t.Fatalf("run = %s with work run %d times at 2h9m, want RUNNING, work run once", res.Status, steps.calls.count("work"))
	}
	h.Advance(time.Minute)
	checkDeadlineFailure(t, h, steps, ref.ID, "10m", h.Start.Add(2*time.Hour+10*time.Minute))
}
