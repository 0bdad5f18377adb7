package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// wakes returns, for each event of a run in order, its type and its wake
// time (zero or an offset from base), so that a test states them in one
// table.
func (f *fixture) wakes(id uuid.UUID, step int, base time.Time) []string {
	f.t.Helper()
	evs, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		f.t.Fatalf("ListEvents: %v", err)
	}
	var out []string
	for _, e := range evs {
		if e.StepIndex != step {
			continue
		}
		if e.WakeAt.IsZero() {
			out = append(out, string(e.Type))
			continue
		}
		out = append(out, string(e.Type)+" wake "+e.WakeAt.Sub(base).String())
	}
	return out
}

// testEventWakeTimes: SLEEPING and RETRYING events say when the task's
// timer is due (WakeAt), and no other event has a wake time. A retry after
// a lost worker is immediate: its wake time is when it was queued again.
func testEventWakeTimes(t *testing.T, f *fixture) {
	base := f.now
	id := f.createDiamond(runOpts{maxAttempts: 3})
	a := f.claimOne(id, stepA)
	f.tick(time.Second)
	f.finish(store.Results{Retries: []store.Retry{{Attempt: attempt(a), Error: "slow", TimedOut: true, At: base.Add(time.Minute)}}})
	if n, err := f.fire(base.Add(time.Minute), 10); n != 1 || err != nil {
		t.Fatalf("FireTimers = %d, %v", n, err)
	}
	f.now = base.Add(time.Minute)
	f.claimOne(id, stepA)
	// The worker never heartbeats: a minute later its task is recovered.
	res, err := f.s.RecoverTasks(f.ctx, store.Recover{StaleBefore: f.tick(time.Minute), Limit: 10, Now: f.now})
	if err != nil || len(res.Requeued) != 1 {
		t.Fatalf("RecoverTasks = %+v, %v; want a requeued", res, err)
	}
	want := []string{
		"QUEUED", "STARTED", "TIMED_OUT", "RETRYING wake 1m0s", "QUEUED", "STARTED",
		"RETRYING wake 2m0s", "QUEUED",
	}
	if diff := cmp.Diff(want, f.wakes(id, stepA, base)); diff != "" {
		t.Errorf("events of a retried task (-want +got):\n%s", diff)
	}

	f.claimOne(id, stepA) // out of the queue, before the next run's

	base = f.now
	slept := f.createDiamond(runOpts{})
	a = f.claimOne(slept, stepA)
	f.tick(time.Second)
	f.finish(store.Results{Sleeps: []store.Sleep{{Attempt: attempt(a), For: 24 * time.Hour}}})
	if n, err := f.fire(base.Add(24*time.Hour+time.Second), 10); n != 1 || err != nil {
		t.Fatalf("FireTimers = %d, %v", n, err)
	}
	f.now = base.Add(24*time.Hour + time.Second)
	woken := f.claimOne(slept, stepA)
	f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(woken), Woken: true, Children: diamondChildren[stepA]}}})
	// The sleep is measured from its SLEEPING event, a second after the claim.
	want = []string{"QUEUED", "STARTED", "SLEEPING wake 24h0m1s", "WOKEN", "COMPLETED"}
	if diff := cmp.Diff(want, f.wakes(slept, stepA, base)); diff != "" {
		t.Errorf("events of a sleep (-want +got):\n%s", diff)
	}
	evs, err := f.s.ListEvents(f.ctx, slept)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == store.EventSleeping && e.Detail == "" {
			t.Errorf("SLEEPING event without a detail for people: %+v", e)
		}
	}
}
