package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The rules these check are store.Limit's.

// wantRoots claims everything claimable and checks that the roots (step
// A, the one with a limit) among it are those of the want runs. It
// returns the roots claimed.
func (f *fixture) wantRoots(what string, want ...uuid.UUID) []store.ClaimedTask {
	f.t.Helper()
	var roots []store.ClaimedTask
	var runs []uuid.UUID
	for _, c := range f.claim(100) {
		if c.Key.Step == stepA {
			roots = append(roots, c)
			runs = append(runs, c.Key.Run)
		}
	}
	if len(runs) != len(want) || !sameSet(runs, want) {
		f.t.Fatalf("%s: claimed the roots of %v, want %v", what, runs, want)
	}
	return roots
}

func sameSet(a, b []uuid.UUID) bool {
	seen := map[uuid.UUID]int{}
	for _, id := range a {
		seen[id]++
	}
	for _, id := range b {
		seen[id]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func testLimitHolds(t *testing.T, f *fixture) {
	one := store.Limit{Key: "customer=c1", Max: 1}
	first := f.createDiamond(runOpts{limit: one})
	second := f.createDiamond(runOpts{limit: one})
	third := f.createDiamond(runOpts{limit: one})
	other := f.createDiamond(runOpts{limit: store.Limit{Key: "customer=c2", Max: 1}})
	free := f.createDiamond(runOpts{})

	got := f.wantRoots("with one slot per key", first, other, free)
	f.wantRoots("while the key's slot is held")
	// A task waiting for a slot is QUEUED, with its QUEUED event.
	if st := f.statuses(second)[stepA]; st != store.TaskQueued {
		t.Errorf("a task waiting for a slot is %s, want QUEUED", st)
	}
	// Completing the holder hands its slot to the next in line, in order.
	for _, c := range got {
		if c.Key.Run == first {
			f.complete(c, `{}`)
		}
	}
	got = f.wantRoots("after the holder completed", second)
	f.complete(got[0], `{}`)
	f.wantRoots("after the second completed", third)

	// Two slots: two at once.
	two := store.Limit{Key: "customer=c3", Max: 2}
	a, b, c := f.createDiamond(runOpts{limit: two}), f.createDiamond(runOpts{limit: two}), f.createDiamond(runOpts{limit: two})
	f.wantRoots("with two slots", a, b)
	_ = c
}

func testLimitReleased(t *testing.T, f *fixture) {
	one := store.Limit{Key: "k", Max: 1}
	failing := f.createDiamond(runOpts{limit: one})
	cancelled := f.createDiamond(runOpts{limit: one})
	last := f.createDiamond(runOpts{limit: one})

	got := f.wantRoots("first", failing)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(got[0]), Error: "boom"}}})
	f.wantRoots("after the holder failed", cancelled)
	if ok, err := f.cancelOne(cancelled, f.now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	got = f.wantRoots("after the holder's run was cancelled", last)
	f.complete(got[0], `{}`)
	// Its slot is back: a new run of the key starts at once.
	next := f.createDiamond(runOpts{limit: one})
	f.wantRoots("a new run once every slot is back", next)
}

func testLimitKept(t *testing.T, f *fixture) {
	one := store.Limit{Key: "k", Max: 1}
	holder := f.createDiamond(runOpts{limit: one, maxAttempts: 3})
	waiter := f.createDiamond(runOpts{limit: one})
	got := f.wantRoots("first", holder)

	// Waiting to retry keeps the slot.
	at := f.now.Add(time.Minute)
	f.finish(store.Results{Retries: []store.Retry{{Attempt: attempt(got[0]), Error: "flaky", At: at}}})
	f.wantRoots("while the holder waits to retry")
	if n, err := f.fire(at, 10); err != nil || n != 1 {
		t.Fatalf("fire = %d, %v", n, err)
	}
	f.tick(time.Minute)
	f.wantRoots("once the retry is due", holder)

	// So does being recovered after its worker died.
	res, err := f.s.RecoverTasks(f.ctx, store.Recover{StaleBefore: f.now.Add(time.Hour), Now: f.now})
	if err != nil || len(res.Requeued) != 1 {
		t.Fatalf("RecoverTasks = %+v, %v; want one requeued", res, err)
	}
	got = f.wantRoots("after recovery", holder)
	f.complete(got[0], `{}`)
	f.wantRoots("once the holder completed", waiter)
}

func testLimitLineCancelled(t *testing.T, f *fixture) {
	one := store.Limit{Key: "k", Max: 1}
	holder := f.createDiamond(runOpts{limit: one})
	gone := f.createDiamond(runOpts{limit: one})
	next := f.createDiamond(runOpts{limit: one})
	got := f.wantRoots("first", holder)
	// A run cancelled while its task waits leaves the line and takes no
	// slot with it.
	if ok, err := f.cancelOne(gone, f.now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	if st := f.statuses(gone)[stepA]; st != store.TaskCancelled {
		t.Errorf("the waiting task of a cancelled run is %s, want CANCELLED", st)
	}
	f.complete(got[0], `{}`)
	got = f.wantRoots("after the holder completed", next)
	f.complete(got[0], `{}`)
	f.wantRoots("with every slot back and nothing waiting")
	again := f.createDiamond(runOpts{limit: one})
	f.wantRoots("a new run", again)
}

func testLimitRetriedRun(t *testing.T, f *fixture) {
	one := store.Limit{Key: "k", Max: 1}
	failed := f.createDiamond(runOpts{limit: one})
	got := f.wantRoots("first", failed)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(got[0]), Error: "boom"}}})
	holder := f.createDiamond(runOpts{limit: one})
	f.wantRoots("the next run", holder)
	// The retried run's root takes a slot again: it waits for the holder.
	if ok, err := f.retryOne(failed, f.now, store.ResetTask{Step: stepA, Pending: 0}); !ok || err != nil {
		t.Fatalf("retry = %v, %v", ok, err)
	}
	f.wantRoots("while the slot is held")
	if ok, err := f.cancelOne(holder, f.now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	f.wantRoots("once the holder's run was cancelled", failed)
}
