package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// What a dashboard polls: the runs created and finished over time, and
// whether a run changed since it was last read.

func testRunActivity(t *testing.T, f *fixture) {
	activity := func(q store.ActivityQuery) store.Activity {
		t.Helper()
		a, err := f.s.RunActivity(f.ctx, q)
		if err != nil {
			t.Fatalf("RunActivity(%+v): %v", q, err)
		}
		if !a.From.Equal(q.From) || !a.To.Equal(q.To()) || a.Bucket != q.Bucket {
			t.Errorf("RunActivity(%+v): window %v to %v in buckets of %v, want the query's", q, a.From, a.To, a.Bucket)
		}
		a.From, a.To, a.Bucket = time.Time{}, time.Time{}, 0 // checked; the cases compare the counts
		return a
	}
	before := f.createDiamond(runOpts{tenant: "acme"}) // created before the window
	f.claimOne(before, stepA)                          // so that completeRun below leaves it alone
	w0 := f.tick(time.Minute)
	q := store.ActivityQuery{From: w0, Bucket: time.Minute, Buckets: 3}
	empty := store.Activity{Running: 1, Buckets: []store.ActivityBucket{
		{Start: w0}, {Start: w0.Add(time.Minute)}, {Start: w0.Add(2 * time.Minute)},
	}}
	if diff := cmp.Diff(empty, activity(q), cmpTimes); diff != "" {
		t.Errorf("nothing in the window (-want +got):\n%s", diff)
	}

	done := f.createDiamond(runOpts{tenant: "acme"})
	f.completeRun(done)
	f.tick(30 * time.Second)
	failed := f.createDiamond(runOpts{tenant: "beta"})
	a := f.claimOne(failed, stepA)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(a), Error: "boom"}}})
	f.tick(time.Minute)
	if ok, err := f.cancelOne(before, f.now); err != nil || !ok {
		t.Fatalf("CancelRuns = %v, %v", ok, err)
	}
	f.createDiamond(runOpts{tenant: "beta"})
	f.now = w0.Add(3 * time.Minute) // the window's end is exclusive
	f.createDiamond(runOpts{tenant: "beta"})

	want := store.Activity{Running: 2, Buckets: []store.ActivityBucket{
		{Start: w0, Created: 2, Completed: 1, Failed: 1},
		{Start: w0.Add(time.Minute), Created: 1, Cancelled: 1},
		{Start: w0.Add(2 * time.Minute)},
	}}
	if diff := cmp.Diff(want, activity(q), cmpTimes); diff != "" {
		t.Errorf("activity (-want +got):\n%s", diff)
	}

	// A retried run is running again: it no longer counts as failed.
	if ok, err := f.retryOne(failed, f.now, store.ResetTask{Step: stepA}); err != nil || !ok {
		t.Fatalf("RetryRuns = %v, %v", ok, err)
	}
	want.Running, want.Buckets[0].Failed = 3, 0
	if diff := cmp.Diff(want, activity(q), cmpTimes); diff != "" {
		t.Errorf("activity after retrying the failed run (-want +got):\n%s", diff)
	}

	// Half-minute buckets split the first minute.
	q = store.ActivityQuery{From: w0, Bucket: 30 * time.Second, Buckets: 2}
	want = store.Activity{Running: 3, Buckets: []store.ActivityBucket{
		{Start: w0, Created: 1, Completed: 1},
		{Start: w0.Add(30 * time.Second), Created: 1},
	}}
	if diff := cmp.Diff(want, activity(q), cmpTimes); diff != "" {
		t.Errorf("activity in half-minute buckets (-want +got):\n%s", diff)
	}
}

func testEventCounts(t *testing.T, f *fixture) {
	counts := func(ids ...uuid.UUID) map[uuid.UUID]int {
		t.Helper()
		got, err := f.s.EventCounts(f.ctx, ids)
		if err != nil {
			t.Fatalf("EventCounts: %v", err)
		}
		return got
	}
	if got := counts(); len(got) != 0 {
		t.Errorf("EventCounts() = %v, want none", got)
	}
	id := f.createDiamond(runOpts{})
	other := f.createDiamond(runOpts{})
	unknown := uuid.Must(uuid.NewV7())
	want := map[uuid.UUID]int{id: len(f.events(id)), other: len(f.events(other))}
	if diff := cmp.Diff(want, counts(id, other, unknown)); diff != "" {
		t.Errorf("EventCounts of two new runs and an unknown id (-want +got):\n%s", diff)
	}
	f.complete(f.claimOne(id, stepA), `{}`)
	got := counts(id, other)
	if got[id] <= want[id] || got[id] != len(f.events(id)) {
		t.Errorf("after step a completed, EventCounts = %d, want %d (more than %d)", got[id], len(f.events(id)), want[id])
	}
	if got[other] != want[other] {
		t.Errorf("the other run's count moved from %d to %d though nothing happened to it", want[other], got[other])
	}
}
