package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The rules these check are store.Rate's. Each test paces step A, the
// root of a diamond.

// turn fires the timers due at the fixture's clock and reports how many
// fired.
func (f *fixture) turn() int {
	f.t.Helper()
	n, err := f.fire(f.now, 100)
	if err != nil {
		f.t.Fatalf("FireTimers: %v", err)
	}
	return n
}

func testRatePaces(t *testing.T, f *fixture) {
	perSecond := store.Rate{Key: "gateway", Interval: time.Second, Burst: 1}
	first := f.createDiamond(runOpts{rate: perSecond})
	second := f.createDiamond(runOpts{rate: perSecond})
	third := f.createDiamond(runOpts{rate: perSecond})
	other := f.createDiamond(runOpts{rate: store.Rate{Key: "other", Interval: time.Second, Burst: 1}})
	free := f.createDiamond(runOpts{})

	f.wantRoots("at once", first, other, free)
	// The others were put off: QUEUED, no longer claimable, with a timer
	// each for its turn, a second apart.
	if st := f.statuses(second)[stepA]; st != store.TaskQueued {
		t.Errorf("a task put off by its rate limit is %s, want QUEUED", st)
	}
	f.wantRoots("before the next turn")
	f.tick(999 * time.Millisecond)
	if n := f.turn(); n != 0 {
		t.Errorf("%d timers fired before the second's turn, want none", n)
	}
	f.tick(time.Millisecond)
	if n := f.turn(); n != 1 {
		t.Errorf("%d timers fired at the second's turn, want 1", n)
	}
	f.wantRoots("at the second's turn", second)
	f.tick(time.Second)
	f.turn()
	f.wantRoots("at the third's turn", third)
	// Being put off writes nothing to the log: queued once, started once.
	if got := f.events(third); !slices.Equal(got, []string{"a:QUEUED", "a:STARTED"}) {
		t.Errorf("the third run's events are %v, want [a:QUEUED a:STARTED]", got)
	}
}

func testRateBurst(t *testing.T, f *fixture) {
	bursty := store.Rate{Key: "k", Interval: time.Second, Burst: 3}
	a, b, c, d := f.createDiamond(runOpts{rate: bursty}), f.createDiamond(runOpts{rate: bursty}),
		f.createDiamond(runOpts{rate: bursty}), f.createDiamond(runOpts{rate: bursty})
	f.wantRoots("a burst of three", a, b, c)
	f.tick(time.Second)
	f.turn()
	f.wantRoots("the fourth a second later", d)
	// After a quiet spell the whole burst is back.
	f.tick(10 * time.Second)
	e, g, h := f.createDiamond(runOpts{rate: bursty}), f.createDiamond(runOpts{rate: bursty}), f.createDiamond(runOpts{rate: bursty})
	f.wantRoots("a burst again after a quiet spell", e, g, h)
}

func testRateLine(t *testing.T, f *fixture) {
	perSecond := store.Rate{Key: "k", Interval: time.Second, Burst: 1}
	first := f.createDiamond(runOpts{rate: perSecond})
	second := f.createDiamond(runOpts{rate: perSecond})
	f.wantRoots("first", first)
	// Turns go in order: a task new to the key takes the turn after those
	// given already, even when the second's turn is past and it has not
	// started yet.
	f.tick(1500 * time.Millisecond)
	late := f.createDiamond(runOpts{rate: perSecond})
	f.turn()
	f.wantRoots("the second, whose turn is past", second)
	f.wantRoots("not the late one, whose turn is next")
	f.tick(time.Second)
	f.turn()
	f.wantRoots("the late one at its turn", late)
}

func testRateCountsRetries(t *testing.T, f *fixture) {
	perMinute := store.Rate{Key: "k", Interval: time.Minute, Burst: 1}
	run := f.createDiamond(runOpts{rate: perMinute, maxAttempts: 2})
	got := f.wantRoots("first", run)
	start := f.now
	f.tick(time.Second)
	f.finish(store.Results{Retries: []store.Retry{{Attempt: attempt(got[0]), Error: "flaky", At: f.now}}})
	f.turn()
	// The retry is a start too: it waits for the minute to pass.
	f.wantRoots("a retry within the minute")
	f.now = start.Add(time.Minute)
	f.turn()
	got = f.wantRoots("the retry at its turn", run)
	if got[0].Attempt != 2 {
		t.Errorf("the retry is attempt %d, want 2", got[0].Attempt)
	}
}

func testRateCancelled(t *testing.T, f *fixture) {
	perSecond := store.Rate{Key: "k", Interval: time.Second, Burst: 1}
	first := f.createDiamond(runOpts{rate: perSecond})
	gone := f.createDiamond(runOpts{rate: perSecond})
	f.wantRoots("first", first)
	depth, err := f.s.QueueDepth(f.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	// A task put off is queued (C and B of the first run are not yet).
	if depth.Queued != 1 {
		t.Errorf("queue depth %d with one task put off, want 1", depth.Queued)
	}
	if ok, err := f.cancelOne(gone, f.now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	f.tick(time.Second)
	f.turn()
	f.wantRoots("the cancelled run's turn")
	if st := f.statuses(gone)[stepA]; st != store.TaskCancelled {
		t.Errorf("the put-off task of a cancelled run is %s, want CANCELLED", st)
	}
	if depth, _ := f.s.QueueDepth(f.ctx, 10); depth.Queued != 0 {
		t.Errorf("queue depth %d after the cancelled run's turn, want 0", depth.Queued)
	}
}
