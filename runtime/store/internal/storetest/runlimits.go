package storetest

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The rules these check are store.RunLimit's.

// runToEnd claims and completes every task of the given runs (and the
// tasks given) until none can be claimed; it returns the tasks of other
// runs it claimed meanwhile, uncompleted.
func (f *fixture) runToEnd(claimed []store.ClaimedTask, runs ...uuid.UUID) []store.ClaimedTask {
	f.t.Helper()
	mine := map[uuid.UUID]bool{}
	for _, id := range runs {
		mine[id] = true
	}
	var others []store.ClaimedTask
	for range 10 {
		for _, c := range claimed {
			if mine[c.Key.Run] {
				f.complete(c, `{}`)
			} else {
				others = append(others, c)
			}
		}
		if claimed = f.claim(100); len(claimed) == 0 {
			break
		}
	}
	return others
}

func (f *fixture) wantRunStatus(id uuid.UUID, want store.RunStatus, waiting bool) {
	f.t.Helper()
	r := f.run(id)
	if r.Status != want || r.Waiting != waiting {
		f.t.Fatalf("run %s is %s (waiting %v), want %s (waiting %v)", id, r.Status, r.Waiting, want, waiting)
	}
}

func (f *fixture) cancelDetail(id uuid.UUID) string {
	f.t.Helper()
	events, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		f.t.Fatalf("ListEvents: %v", err)
	}
	for _, e := range events {
		if e.Type == store.EventCancelled {
			return e.Detail
		}
	}
	f.t.Fatalf("run %s has no CANCELLED event", id)
	return ""
}

func testRunLimitQueue(t *testing.T, f *fixture) {
	one := store.RunLimit{Key: "diamond@runs:c1", Max: 1, Strategy: store.RunLimitQueue}
	first := f.createDiamond(runOpts{runLimit: one})
	second := f.createDiamond(runOpts{runLimit: one})
	third := f.createDiamond(runOpts{runLimit: one})
	other := f.createDiamond(runOpts{runLimit: store.RunLimit{Key: "diamond@runs:c2", Max: 1}})

	f.wantRunStatus(second, store.RunRunning, true)
	if st := f.statuses(second)[stepA]; st != store.TaskQueued {
		t.Errorf("the root of a waiting run is %s, want QUEUED", st)
	}
	// The roots of waiting runs count as queued, as tasks waiting for a
	// slot of a task limit do.
	if d, err := f.s.QueueDepth(f.ctx, 10); err != nil || d.Queued != 4 {
		t.Errorf("queue depth = %d, %v; want 4 (two roots queued, two of waiting runs)", d.Queued, err)
	}
	if st, err := f.s.QueueStats(f.ctx); err != nil || len(st) != 1 || st[0].Queued != 4 {
		t.Errorf("queue stats = %+v, %v; want 4 queued", st, err)
	}
	// The first run holds its key through all its steps, not only its
	// root: the second waits until the first ends.
	got := f.wantRoots("one run per key", first, other)
	for _, c := range got {
		f.complete(c, `{}`)
	}
	f.wantRunStatus(second, store.RunRunning, true)
	let := f.runToEnd(nil, first, other)
	f.wantRunStatus(first, store.RunCompleted, false)
	f.wantRunStatus(second, store.RunRunning, false)
	f.wantRunStatus(third, store.RunRunning, true)
	// In order: the second, then the third.
	let = f.runToEnd(let, second)
	f.wantRunStatus(second, store.RunCompleted, false)
	if rest := f.runToEnd(let, third); len(rest) > 0 {
		t.Fatalf("claimed %d tasks of runs that should wait", len(rest))
	}
	f.wantRunStatus(third, store.RunCompleted, false)
	// Every slot is back: a new run starts at once.
	next := f.createDiamond(runOpts{runLimit: one})
	f.wantRunStatus(next, store.RunRunning, false)

	// Two slots: two runs at once.
	two := store.RunLimit{Key: "diamond@runs:c3", Max: 2}
	a, b, c := f.createDiamond(runOpts{runLimit: two}), f.createDiamond(runOpts{runLimit: two}), f.createDiamond(runOpts{runLimit: two})
	f.wantRunStatus(a, store.RunRunning, false)
	f.wantRunStatus(b, store.RunRunning, false)
	f.wantRunStatus(c, store.RunRunning, true)
}

func testRunLimitLineCancelled(t *testing.T, f *fixture) {
	one := store.RunLimit{Key: "diamond@runs:k", Max: 1}
	holder := f.createDiamond(runOpts{runLimit: one})
	leaving := f.createDiamond(runOpts{runLimit: one})
	last := f.createDiamond(runOpts{runLimit: one})
	// A waiting run that is cancelled leaves the line without a slot.
	if ok, err := f.cancelOne(leaving, f.now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	f.wantRunStatus(leaving, store.RunCancelled, false)
	// A run that fails gives its slot back.
	got := f.wantRoots("the holder", holder)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(got[0]), Error: "boom"}}})
	f.wantRunStatus(holder, store.RunFailed, false)
	f.wantRunStatus(last, store.RunRunning, false)
	// The failure handler of the failed run runs; the last run's root too.
	var roots int
	for _, c := range f.claim(100) {
		if c.Key.Run == last && c.Key.Step == stepA {
			roots++
		}
	}
	if roots != 1 {
		t.Fatalf("claimed %d roots of the run let in, want 1", roots)
	}
}

func testRunLimitCancelInProgress(t *testing.T, f *fixture) {
	one := store.RunLimit{Key: "diamond@runs:k", Max: 1, Strategy: store.RunLimitCancelInProgress}
	old := f.createDiamond(runOpts{runLimit: one})
	f.wantRoots("the old run", old)
	newer := f.createDiamond(runOpts{runLimit: one})
	f.wantRunStatus(old, store.RunCancelled, false)
	f.wantRunStatus(newer, store.RunRunning, false)
	if d := f.cancelDetail(old); !strings.Contains(d, "cancelled by a newer run "+newer.String()) {
		t.Errorf("the cancelled run says %q, want it to name run %s", d, newer)
	}
	f.wantRoots("the newer run", newer)
	// A run of another key is not touched.
	other := f.createDiamond(runOpts{runLimit: store.RunLimit{Key: "diamond@runs:other", Max: 1, Strategy: store.RunLimitCancelInProgress}})
	f.wantRunStatus(newer, store.RunRunning, false)
	f.wantRunStatus(other, store.RunRunning, false)
}

func testRunLimitCancelNewest(t *testing.T, f *fixture) {
	one := store.RunLimit{Key: "diamond@runs:k", Max: 1, Strategy: store.RunLimitCancelNewest}
	running := f.createDiamond(runOpts{runLimit: one})
	refused := f.createDiamond(runOpts{runLimit: one})
	f.wantRunStatus(running, store.RunRunning, false)
	f.wantRunStatus(refused, store.RunCancelled, false)
	if d := f.cancelDetail(refused); !strings.Contains(d, running.String()) {
		t.Errorf("the refused run says %q, want it to name run %s", d, running)
	}
	f.runToEnd(f.wantRoots("only the running run", running), running)
	f.wantRunStatus(running, store.RunCompleted, false)
	// Its slot is back, and the refused run held none.
	next := f.createDiamond(runOpts{runLimit: one})
	f.wantRunStatus(next, store.RunRunning, false)
}

// testRunLimitCreateConcurrently: callers creating runs of shared keys
// at once never let more than Max runs of a key in, whatever the
// strategy.
func testRunLimitCreateConcurrently(t *testing.T, f *fixture) {
	const callers, perBatch = 8, 6
	strategies := []string{store.RunLimitQueue, store.RunLimitCancelInProgress, store.RunLimitCancelNewest}
	batches := make([][]store.NewRun, callers)
	for c := range batches {
		for i := range perBatch {
			s := strategies[i%len(strategies)]
			batches[c] = append(batches[c], store.NewRun{
				ID: uuid.Must(uuid.NewV7()), Workflow: "diamond", Version: "diamond@v1", Tenant: "default",
				Input: []byte(`{}`), Tasks: diamondTasks(1),
				RunLimit: store.RunLimit{Key: "diamond@runs:" + s, Max: 1, Strategy: s},
			})
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Runs: batches[c], Now: f.now}); err != nil {
				t.Errorf("batch %d: %v", c, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	in := map[string]int{}      // runs let in and running, by strategy
	waiting := map[string]int{} // by strategy
	for _, b := range batches {
		for _, nr := range b {
			r := f.run(nr.ID)
			switch {
			case r.Status == store.RunRunning && r.Waiting:
				waiting[nr.RunLimit.Strategy]++
			case r.Status == store.RunRunning:
				in[nr.RunLimit.Strategy]++
			}
		}
	}
	total := callers * perBatch / len(strategies)
	for _, s := range strategies {
		if in[s] != 1 {
			t.Errorf("%s: %d runs of the key are in, want 1", s, in[s])
		}
	}
	if waiting[store.RunLimitQueue] != total-1 {
		t.Errorf("queue: %d runs wait, want %d", waiting[store.RunLimitQueue], total-1)
	}
	// Exactly the runs let in have their roots queued.
	roots := 0
	for _, c := range f.claim(1000) {
		if c.Key.Step == stepA {
			roots++
		}
	}
	if roots != len(strategies) {
		t.Errorf("claimed %d roots, want %d (one run per key)", roots, len(strategies))
	}
}

// testRunLimitRetriedRun: a run a retry reopens takes a slot of its key
// again at once, even over max, and gives it back when it ends.
func testRunLimitRetriedRun(t *testing.T, f *fixture) {
	one := store.RunLimit{Key: "diamond@runs:k", Max: 1}
	a := f.createDiamond(runOpts{runLimit: one})
	b := f.createDiamond(runOpts{runLimit: one})
	got := f.wantRoots("the first run", a)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(got[0]), Error: "boom"}}})
	f.wantRunStatus(a, store.RunFailed, false)
	f.wantRunStatus(b, store.RunRunning, false)
	reset := []store.ResetTask{{Step: stepA}, {Step: stepB, Pending: 1}, {Step: stepC, Pending: 1}, {Step: stepD, Pending: 2}}
	if ok, err := f.retryOne(a, f.now, reset...); !ok || err != nil {
		t.Fatalf("retry = %v, %v", ok, err)
	}
	// a and b both hold a slot now; a new run waits for both.
	c := f.createDiamond(runOpts{runLimit: one})
	f.wantRunStatus(c, store.RunRunning, true)
	rest := f.runToEnd(nil, b)
	f.wantRunStatus(b, store.RunCompleted, false)
	f.wantRunStatus(c, store.RunRunning, true)
	f.runToEnd(rest, a)
	f.wantRunStatus(a, store.RunCompleted, false)
	f.wantRunStatus(c, store.RunRunning, false)
}
