package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime/store"
)

// fireRunTimers fires the run timers due at now.
func (f *fixture) fireRunTimers(now time.Time) []store.FiredRunTimer {
	f.t.Helper()
	fired, err := f.s.FireRunTimers(f.ctx, now, 100)
	if err != nil {
		f.t.Fatalf("FireRunTimers: %v", err)
	}
	return fired
}

// nextTimer is NextTimer, or the zero time when there is none.
func (f *fixture) nextTimer() time.Time {
	f.t.Helper()
	at, ok, err := f.s.NextTimer(f.ctx)
	if err != nil {
		f.t.Fatalf("NextTimer: %v", err)
	}
	if !ok {
		return time.Time{}
	}
	return at
}

func testDelayedStart(t *testing.T, f *fixture) {
	start := f.now.Add(time.Hour)
	id := f.createDiamond(runOpts{startAt: start, timeout: 10 * time.Minute})
	r := f.run(id)
	if r.Status != store.RunRunning || !r.StartAt.Equal(start) || !r.Deadline.IsZero() || !r.Scheduled(f.now) {
		t.Errorf("run = %s, starts %s, deadline %s; want RUNNING, scheduled for %s, no deadline yet", r.Status, r.StartAt, r.Deadline, start)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Fatalf("claimed %d tasks of a run not yet started", len(got))
	}
	if got := f.nextTimer(); !got.Equal(start) {
		t.Errorf("NextTimer = %s, want the start %s", got, start)
	}
	if got := f.fireRunTimers(start.Add(-time.Second)); len(got) != 0 {
		t.Fatalf("fired %+v before the start", got)
	}
	fired := f.fireRunTimers(start)
	if len(fired) != 1 || fired[0].ID != id || !fired[0].Started || !fired[0].Due.Equal(start) {
		t.Fatalf("fired %+v, want the run's start", fired)
	}
	if diff := cmp.Diff([]int{stepA}, steps(f.claim(10))); diff != "" {
		t.Errorf("claimed steps after the start (-want +got):\n%s", diff)
	}
	if r := f.run(id); !r.Deadline.Equal(start.Add(10*time.Minute)) || r.Scheduled(start) {
		t.Errorf("deadline = %s (scheduled %v), want the timeout from the start, %s", r.Deadline, r.Scheduled(start), start.Add(10*time.Minute))
	}
	if got := f.nextTimer(); !got.Equal(start.Add(10 * time.Minute)) {
		t.Errorf("NextTimer = %s, want the deadline", got)
	}
	evs, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].StepIndex != stepA || evs[0].Type != store.EventQueued || evs[0].Detail != "run started" || !evs[0].At.Equal(start) {
		t.Errorf("first event = %+v, want step a QUEUED at the start, detail \"run started\"", evs[0])
	}
}

func testDeadlineFails(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{timeout: 10 * time.Minute})
	if r := f.run(id); !r.Deadline.Equal(f.now.Add(10 * time.Minute)) {
		t.Errorf("deadline = %s, want %s", r.Deadline, f.now.Add(10*time.Minute))
	}
	f.claimOne(id, stepA)
	deadline := f.tick(10 * time.Minute)
	fired := f.fireRunTimers(deadline)
	if len(fired) != 1 || fired[0].ID != id || fired[0].Started || fired[0].Workflow != "diamond" {
		t.Fatalf("fired %+v, want the run's deadline", fired)
	}
	r := f.run(id)
	want := store.RunFailure{StepIndex: -1, Error: "run deadline of 10m passed"}
	if r.Status != store.RunFailed || r.Failure == nil || *r.Failure != want || !r.FinishedAt.Equal(deadline) {
		t.Errorf("run = %s, failure %+v at %s; want FAILED with %+v at the deadline", r.Status, r.Failure, r.FinishedAt, want)
	}
	wantStatuses := []store.TaskStatus{store.TaskCancelled, store.TaskCancelled, store.TaskCancelled, store.TaskCancelled, store.TaskQueued}
	if diff := cmp.Diff(wantStatuses, f.statuses(id)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if got := f.task(id, stepA); got.Status != store.TaskCancelled {
		t.Errorf("the running task is %s, want CANCELLED", got.Status)
	}
	h := f.claim(10)
	if len(h) != 1 || h[0].Key.Step != stepH || h[0].FailedStep != -1 || h[0].Error != want.Error {
		t.Errorf("claimed %+v, want the failure handler told of the deadline", h)
	}
	if got := f.fireRunTimers(deadline.Add(time.Hour)); len(got) != 0 {
		t.Errorf("the deadline fired again: %+v", got)
	}
}

func testRunTimerOfEndedRun(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{timeout: 10 * time.Minute})
	delayed := f.createDiamond(runOpts{startAt: f.now.Add(time.Hour)})
	if ok, err := f.cancelOne(id, f.now); !ok || err != nil {
		t.Fatalf("cancelling: %v, %v", ok, err)
	}
	if ok, err := f.cancelOne(delayed, f.now); !ok || err != nil {
		t.Fatalf("cancelling the delayed run: %v, %v", ok, err)
	}
	retried := f.createDiamond(runOpts{startAt: f.now.Add(time.Hour), timeout: 10 * time.Minute})
	if ok, err := f.cancelOne(retried, f.now); !ok || err != nil {
		t.Fatalf("cancelling the delayed run to retry: %v, %v", ok, err)
	}
	reset := []store.ResetTask{{Step: stepA}, {Step: stepB, Pending: 1}, {Step: stepC, Pending: 1}, {Step: stepD, Pending: 2}, {Step: stepH}}
	if ok, err := f.retryOne(retried, f.now, reset...); !ok || err != nil {
		t.Fatalf("retrying the delayed run: %v, %v", ok, err)
	}
	if diff := cmp.Diff([]int{stepA}, steps(f.claim(10))); diff != "" {
		t.Errorf("claimed steps of the retried run (-want +got):\n%s", diff)
	}
	if got := f.fireRunTimers(f.now.Add(2 * time.Hour)); len(got) != 0 {
		t.Errorf("fired %+v for cancelled runs and a run retried before its start", got)
	}
	if r := f.run(retried); r.Status != store.RunRunning || !r.Deadline.IsZero() {
		t.Errorf("the retried run is %s with deadline %s, want RUNNING without one", r.Status, r.Deadline)
	}
	if r := f.run(id); r.Status != store.RunCancelled || r.Failure != nil {
		t.Errorf("run = %s (%+v), want CANCELLED", r.Status, r.Failure)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Errorf("claimed %d tasks of cancelled runs", len(got))
	}
	if got := f.nextTimer(); !got.IsZero() {
		t.Errorf("NextTimer = %s after the timers fired, want none", got)
	}
}
