package storetest

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// The rules these check are in runtime/store/priority.go.

func testRunPriority(t *testing.T, f *fixture) {
	if got := f.run(f.createDiamond(runOpts{})).Priority; got != spec.PriorityNormal {
		t.Errorf("a run created with priority 0 has priority %d, want PriorityNormal (%d)", got, spec.PriorityNormal)
	}
	if got := f.run(f.createDiamond(runOpts{priority: spec.PriorityHigh})).Priority; got != spec.PriorityHigh {
		t.Errorf("a run created with PriorityHigh has priority %d", got)
	}
	for _, p := range []int{-1, 4} {
		_, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: []store.NewRun{{
			ID: uuid.Must(uuid.NewV7()), Workflow: "diamond", Version: "diamond@v1", Tenant: "default",
			Priority: p, Input: []byte(`{}`), Tasks: diamondTasks(1),
		}}})
		if err == nil {
			t.Errorf("CreateRuns with priority %d succeeded, want an error", p)
		}
	}
}

// claimOrder claims one task at a time until the queue is empty and
// returns the runs of the tasks in claim order.
func (f *fixture) claimOrder() []uuid.UUID {
	f.t.Helper()
	var order []uuid.UUID
	for {
		got := f.claim(1)
		if len(got) == 0 {
			return order
		}
		order = append(order, got[0].Key.Run)
	}
}

func testPriorityFirst(t *testing.T, f *fixture) {
	// A tenant's backlog of normal runs; then one high and one low run.
	var normal []uuid.UUID
	for range 10 {
		normal = append(normal, f.createDiamond(runOpts{}))
	}
	high := f.createDiamond(runOpts{priority: spec.PriorityHigh})
	low := f.createDiamond(runOpts{priority: spec.PriorityLow})

	order := f.claimOrder()
	if len(order) != 12 {
		t.Fatalf("claimed %d roots, want 12", len(order))
	}
	// The high run's root shares the first round with the oldest normal
	// one, and goes first in it; the low run's waits for every normal one.
	if i := slices.Index(order, high); i != 0 {
		t.Errorf("the high-priority root was claimed %d-th, want first", i+1)
	}
	if i := slices.Index(order, low); i != len(order)-1 {
		t.Errorf("the low-priority root was claimed %d-th of %d, want last", i+1, len(order))
	}
	// Normal runs keep their order among themselves.
	var got []uuid.UUID
	for _, id := range order {
		if id != high && id != low {
			got = append(got, id)
		}
	}
	if !slices.Equal(got, normal) {
		t.Errorf("normal-priority roots were claimed out of their order")
	}
}

func testLowPriorityNotStarved(t *testing.T, f *fixture) {
	// Low runs queued first keep their rounds, however many high runs
	// arrive after them: each round takes one of each lane.
	var low []uuid.UUID
	for range 3 {
		low = append(low, f.createDiamond(runOpts{priority: spec.PriorityLow}))
	}
	for range 20 {
		f.createDiamond(runOpts{priority: spec.PriorityHigh})
	}
	order := f.claimOrder()
	last := -1
	for _, id := range low {
		last = max(last, slices.Index(order, id))
	}
	if last < 0 || last > 5 {
		t.Errorf("the third low-priority root was claimed at position %d (of %d), want within the first 3 rounds (6 claims)", last+1, len(order))
	}
}

func testInProgressFirst(t *testing.T, f *fixture) {
	// A run under way finishes before the tenant's new runs start: once
	// its root completes, its children are claimed in the next rounds,
	// not behind the 20 runs created meanwhile.
	a := f.createDiamond(runOpts{})
	root := f.claimOne(a, stepA)
	for range 20 {
		f.createDiamond(runOpts{})
	}
	f.complete(root, `{}`)
	got := f.claim(4)
	var children int
	for _, c := range got {
		if c.Key.Run == a {
			children++
		}
	}
	if children != 2 {
		t.Errorf("the first 4 claims after the root completed took %d of its 2 children (%v)", children, keys(got))
	}
}

func testFairWithPriorities(t *testing.T, f *fixture) {
	// Tenant B's backlog in three lanes does not hold back tenant A's one
	// new task by more than one task per lane of B.
	for _, p := range []int{spec.PriorityLow, spec.PriorityNormal, spec.PriorityHigh} {
		for range 10 {
			f.createDiamond(runOpts{tenant: "B", priority: p})
		}
	}
	a := f.createDiamond(runOpts{tenant: "A"})
	i := slices.Index(f.claimOrder(), a)
	if i < 0 || i > 3 {
		t.Errorf("tenant A's task was claimed at position %d, want within the first 4", i+1)
	}
}
