package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// cmpTimes compares times as instants (Postgres keeps microseconds and
// its own location).
var cmpTimes = cmpopts.EquateApproxTime(time.Microsecond)

func testRelease(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{maxAttempts: 1})
	a := f.claimOne(id, stepA)
	// Another worker, or another attempt, cannot release w1's task.
	for _, p := range []store.Release{
		{Worker: "w2", Attempts: []store.Attempt{attempt(a)}},
		{Worker: "w1", Attempts: []store.Attempt{{Key: a.Key, Attempt: a.Attempt + 1}}},
	} {
		p.Now = f.now
		if got, err := f.s.ReleaseTasks(f.ctx, p); err != nil || len(got.Requeued)+len(got.Failed) != 0 {
			t.Fatalf("ReleaseTasks(%+v) = %v, %v; want nothing released", p, got, err)
		}
	}
	got, err := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{attempt(a)}, Reason: "handed back", Now: f.tick(time.Second)})
	if err != nil || !cmp.Equal(got.Requeued, []store.Attempt{attempt(a)}) || len(got.Failed) != 0 {
		t.Fatalf("ReleaseTasks = %+v, %v; want a released", got, err)
	}
	if held, _ := f.s.Heartbeat(f.ctx, "w1", f.now); len(held) != 0 {
		t.Errorf("w1 still holds %v", held)
	}
	// Released again, and released once only.
	if got, _ := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{attempt(a)}, Now: f.now}); len(got.Requeued) != 0 {
		t.Errorf("released twice: %v", got)
	}
	// The next claim is a new attempt, but not one more against the budget
	// of one attempt: the task can still complete, and its late result
	// under the old attempt is stale.
	again := f.claimOne(id, stepA)
	if again.Attempt <= a.Attempt || again.Attempt-again.PriorAttempts != 1 {
		t.Errorf("claim after release: attempt %d (prior %d), want a new attempt counted as the first", again.Attempt, again.PriorAttempts)
	}
	if r := f.complete(a, `{}`); len(r.Stale) != 1 {
		t.Error("the released attempt's result was applied")
	}
	f.complete(again, `{}`)
	want := []string{"a:QUEUED", "a:STARTED", "a:QUEUED", "a:STARTED", "a:COMPLETED"}
	if diff := cmp.Diff(want, f.events(id)[:5]); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	evs, _ := f.s.ListEvents(f.ctx, id)
	if evs[2].Detail != "handed back" {
		t.Errorf("QUEUED after release has detail %q, want the reason", evs[2].Detail)
	}
	// A counted release is a used attempt: out of attempts, the task fails
	// and its run with it.
	b := f.claim(1)
	res, err := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{attempt(b[0])}, Reason: "stopped mid-step", Count: true, Now: f.now})
	if err != nil || !cmp.Equal(res.Failed, []store.Attempt{attempt(b[0])}) || len(res.Requeued) != 0 {
		t.Errorf("counted ReleaseTasks of %v = %+v, %v; want it failed, out of its single attempt", keys(b), res, err)
	}
	if r := f.run(id); r.Status != store.RunFailed || r.Failure == nil || r.Failure.Error != "stopped mid-step" {
		t.Errorf("run = %s (%+v), want FAILED with the reason", r.Status, r.Failure)
	}
}

func testReleaseCounted(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{maxAttempts: 2})
	a := f.claimOne(id, stepA)
	res, err := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{attempt(a)}, Reason: "stopped mid-step", Count: true, Now: f.now})
	if err != nil || !cmp.Equal(res.Requeued, []store.Attempt{attempt(a)}) {
		t.Fatalf("counted ReleaseTasks = %+v, %v; want a requeued", res, err)
	}
	again := f.claimOne(id, stepA)
	if again.Attempt-again.PriorAttempts != 2 {
		t.Errorf("attempt after a counted release = %d, want 2", again.Attempt-again.PriorAttempts)
	}
	want := []store.EventType{store.EventQueued, store.EventStarted, store.EventRetrying, store.EventQueued, store.EventStarted}
	if diff := cmp.Diff(want, f.trail(id, stepA)); diff != "" {
		t.Errorf("trail (-want +got):\n%s", diff)
	}
}

func testCreateByID(t *testing.T, f *fixture) {
	id := uuid.Must(uuid.NewV7())
	run := store.NewRun{ID: id, Workflow: "diamond", Version: "diamond@v1", Tenant: "default", Input: []byte(`{}`), Tasks: diamondTasks(1)}
	keyed := run
	keyed.ID, keyed.IdempotencyKey = uuid.Must(uuid.NewV7()), "k"
	for try := range 2 {
		res, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: []store.NewRun{run, keyed}})
		if err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
		want := []store.CreateRunResult{{ID: run.ID, Created: true}, {ID: keyed.ID, Created: true}}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("try %d (-want +got):\n%s", try, diff)
		}
	}
	if got := f.claim(10); len(got) != 2 {
		t.Errorf("claimed %d roots, want one per run", len(got))
	}
}

// testEventTimesMonotonic gives every operation a time earlier than the
// one before, as engines whose clocks disagree would: each task's events
// still never go back in time, and children are queued no earlier than
// their parents resolved.
func testEventTimesMonotonic(t *testing.T, f *fixture) {
	back := func() time.Time { return f.tick(-time.Second) }
	id := f.createDiamond(runOpts{maxAttempts: 2})
	f.tick(time.Hour)
	f.now = f.now.Add(-30 * time.Minute)
	a := f.claim(1, func(c *store.Claim) { c.Now = back() })[0]
	f.finish(store.Results{Now: back(), Retries: []store.Retry{{Attempt: attempt(a), Error: "x", At: f.now}}})
	if n, _ := f.fire(f.now.Add(time.Hour), 10); n != 1 {
		t.Fatal("the retry timer did not fire")
	}
	a = f.claim(1, func(c *store.Claim) { c.Now = back() })[0]
	res, err := f.s.Finish(f.ctx, store.Results{Now: back(), Completions: []store.Completion{{Attempt: attempt(a), Children: diamondChildren[stepA]}}})
	if err != nil || len(res.Stale) != 0 {
		t.Fatalf("Finish = %+v, %v", res, err)
	}
	bc := f.claim(2, func(c *store.Claim) { c.Now = back() })
	for _, c := range bc {
		if !c.Plain {
			if err := f.s.StartTasks(f.ctx, []store.Attempt{attempt(c)}, back()); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.finish(store.Results{Now: back(), Sleeps: []store.Sleep{{Attempt: attempt(bc[0]), For: time.Minute}}})
	f.finish(store.Results{Now: back(), Failures: []store.Failure{{Attempt: attempt(bc[1]), Error: "boom"}}})
	if _, err := f.retryOne(id, back(), store.ResetTask{Step: bc[1].Key.Step}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cancelOne(id, back()); err != nil {
		t.Fatal(err)
	}
	evs, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	checkEventTimes(t, evs, [][]int{stepB: {stepA}, stepC: {stepA}, stepD: {stepB, stepC}})
}

// checkEventTimes checks that each task's events never go back in time and
// that a task is queued no earlier than each of its parents resolved.
func checkEventTimes(t *testing.T, evs []store.Event, parents [][]int) {
	t.Helper()
	last := map[int]store.Event{}
	resolved := map[int]time.Time{}
	for _, e := range evs {
		if prev, ok := last[e.StepIndex]; ok && e.At.Before(prev.At) {
			t.Errorf("step %s: %s at %v comes before the earlier %s at %v", stepNames[e.StepIndex], e.Type, e.At, prev.Type, prev.At)
		}
		last[e.StepIndex] = e
		switch e.Type {
		case store.EventCompleted, store.EventSkipped:
			resolved[e.StepIndex] = e.At
		case store.EventQueued:
			if e.StepIndex >= len(parents) {
				continue
			}
			for _, p := range parents[e.StepIndex] {
				if at, ok := resolved[p]; ok && e.At.Before(at) {
					t.Errorf("step %s queued at %v, before its parent %s resolved at %v", stepNames[e.StepIndex], e.At, stepNames[p], at)
				}
			}
		}
	}
}

func testStuckTasks(t *testing.T, f *fixture) {
	start := f.now
	running := f.createDiamond(runOpts{tenant: "acme"})
	a := f.claimOne(running, stepA)
	sleeping := f.createDiamond(runOpts{})
	s := f.claimOne(sleeping, stepA)
	f.finish(store.Results{Sleeps: []store.Sleep{{Attempt: attempt(s), For: time.Minute}}})
	f.tick(time.Hour)
	queued := f.createDiamond(runOpts{}) // queued an hour later than the others
	stuck := func(before time.Time) []store.StuckTask {
		t.Helper()
		got, err := f.s.StuckTasks(f.ctx, store.Stuck{Before: before, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Half an hour in: the claimed task, and the sleep whose timer was due
	// after a minute and has not fired. The fresh run is not stuck.
	got := stuck(start.Add(30 * time.Minute))
	want := []store.StuckTask{
		{Key: a.Key, Workflow: "diamond", Version: "diamond@v1", Tenant: "acme", Status: store.TaskRunning, Attempt: 1, Worker: "w1", Since: start},
		{Key: s.Key, Workflow: "diamond", Version: "diamond@v1", Tenant: "default", Status: store.TaskSleeping, Attempt: 1, Since: start.Add(time.Minute)},
	}
	if diff := cmp.Diff(want, got, cmpTimes); diff != "" {
		t.Errorf("stuck half an hour in (-want +got):\n%s", diff)
	}
	if got := stuck(f.tick(time.Hour)); len(got) != 3 || got[2].Key.Run != queued || got[2].Status != store.TaskQueued {
		t.Errorf("stuck two hours in = %+v, want the queued task last", got)
	}
	if got, _ := f.s.StuckTasks(f.ctx, store.Stuck{Before: f.now, Limit: 1}); len(got) != 1 {
		t.Errorf("Limit 1 returned %d", len(got))
	}
	// Progress unsticks: once the timer fires, the task is queued (anew).
	if n, _ := f.fire(f.now, 10); n != 1 {
		t.Fatal("the timer did not fire")
	}
	for _, st := range stuck(f.now) {
		if st.Key == s.Key {
			t.Errorf("the woken sleep is still reported: %+v", st)
		}
	}
}
