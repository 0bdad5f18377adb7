package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The rules these check are store.Debounce's.

func testDebounceLastRuns(t *testing.T, f *fixture) {
	db := store.Debounce{Key: "diamond@debounce:k", Window: 30 * time.Second}
	first := f.createDiamond(runOpts{debounce: db})
	if r := f.run(first); r.Status != store.RunRunning || r.Waiting || !r.DebouncedUntil.Equal(f.now.Add(30*time.Second)) {
		t.Fatalf("a debounced run: %s, waiting %v, until %v; want RUNNING until %v", r.Status, r.Waiting, r.DebouncedUntil, f.now.Add(30*time.Second))
	}
	if next, ok, err := f.s.NextTimer(f.ctx); err != nil || !ok || !next.Equal(f.now.Add(30*time.Second)) {
		t.Errorf("NextTimer = %v, %v, %v; want the end of the window", next, ok, err)
	}
	f.wantRoots("while the window is open")
	f.tick(10 * time.Second)
	second := f.createDiamond(runOpts{debounce: db})
	other := f.createDiamond(runOpts{debounce: store.Debounce{Key: "diamond@debounce:other", Window: 30 * time.Second}})
	f.wantRunStatus(first, store.RunCancelled, false)
	if d := f.cancelDetail(first); !strings.Contains(d, "superseded by a newer run "+second.String()) {
		t.Errorf("the superseded run says %q, want it to name run %s", d, second)
	}
	// The window starts again with the newer run: 29s later, nothing.
	f.tick(29 * time.Second)
	if _, err := f.s.FireTimers(f.ctx, f.now, 100); err != nil {
		t.Fatal(err)
	}
	f.wantRoots("before the newer run's window passed")
	f.tick(time.Second)
	if _, err := f.s.FireTimers(f.ctx, f.now, 100); err != nil {
		t.Fatal(err)
	}
	if r := f.run(second); r.Status != store.RunRunning || !r.DebouncedUntil.IsZero() {
		t.Errorf("the last run after its window: %s, until %v", r.Status, r.DebouncedUntil)
	}
	// The other key's window opened with the second's: both passed.
	f.wantRoots("after the window", second, other)
	// A trigger after the window opens a new burst: the run started is
	// not cancelled.
	third := f.createDiamond(runOpts{debounce: db})
	f.wantRunStatus(second, store.RunRunning, false)
	if r := f.run(third); r.DebouncedUntil.IsZero() {
		t.Errorf("a run of a new burst does not wait for its window")
	}
}

func testDebounceMaxWait(t *testing.T, f *fixture) {
	db := store.Debounce{Key: "diamond@debounce:k", Window: 30 * time.Second, MaxWait: time.Minute}
	start := f.now
	// A trigger every 20s, each within the window of the one before.
	last := f.createDiamond(runOpts{debounce: db})
	for range 2 {
		f.tick(20 * time.Second)
		if _, err := f.s.FireTimers(f.ctx, f.now, 100); err != nil {
			t.Fatal(err)
		}
		last = f.createDiamond(runOpts{debounce: db})
	}
	// The burst began at start; maxWait lets its newest run start a
	// minute after, not 30s after the newest trigger.
	if r := f.run(last); !r.DebouncedUntil.Equal(start.Add(time.Minute)) {
		t.Errorf("the newest run of the burst waits until %v, want %v", r.DebouncedUntil, start.Add(time.Minute))
	}
	f.tick(19 * time.Second)
	if _, err := f.s.FireTimers(f.ctx, f.now, 100); err != nil {
		t.Fatal(err)
	}
	f.wantRoots("before maxWait")
	f.tick(time.Second)
	if _, err := f.s.FireTimers(f.ctx, f.now, 100); err != nil {
		t.Fatal(err)
	}
	f.wantRoots("the newest run, at maxWait", last)
}

func testDebounceCancelledWhileWaiting(t *testing.T, f *fixture) {
	db := store.Debounce{Key: "diamond@debounce:k", Window: 30 * time.Second}
	id := f.createDiamond(runOpts{debounce: db})
	if ok, err := f.cancelOne(id, f.now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	if r := f.run(id); !r.DebouncedUntil.IsZero() {
		t.Errorf("a cancelled run says it waits until %v", r.DebouncedUntil)
	}
	f.tick(time.Minute)
	if _, err := f.s.FireTimers(f.ctx, f.now, 100); err != nil {
		t.Fatal(err)
	}
	f.wantRoots("after the window of a cancelled run")
	// The key is free: a new run waits its own window, cancelling nothing.
	next := f.createDiamond(runOpts{debounce: db})
	f.wantRunStatus(id, store.RunCancelled, false)
	if r := f.run(next); r.DebouncedUntil.IsZero() {
		t.Errorf("a new run does not wait for its window")
	}
}
