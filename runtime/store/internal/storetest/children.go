package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// elementRuns are n one-task runs of workflow "elem", as a map step
// spawns them: inputs 0 .. n-1, at indexes 0 .. n-1.
func elementRuns(n int) []store.NewRun {
	out := make([]store.NewRun, n)
	for i := range out {
		out[i] = store.NewRun{
			ID: uuid.Must(uuid.NewV7()), Workflow: "elem", Version: "elem@v1", Tenant: "default",
			Input: fmt.Appendf(nil, "%d", i), Parent: &store.ParentRun{Index: i},
			Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1}},
		}
	}
	return out
}

// spawnFromA claims step A, a map step, of a new diamond run and spawns n
// element runs from it.
func (f *fixture) spawnFromA(n int) (uuid.UUID, store.ClaimedTask) {
	f.t.Helper()
	id := f.createDiamond(runOpts{kindA: store.KindMap})
	a := f.claimOne(id, stepA)
	if res := f.finish(store.Results{Spawns: []store.Spawn{{Attempt: attempt(a), Runs: elementRuns(n)}}}); len(res.Stale) > 0 {
		f.t.Fatalf("Spawn was stale: %v", res.Stale)
	}
	return id, a
}

// children returns the runs step A of a run spawned.
func (f *fixture) children(id uuid.UUID) []store.RunWithTasks {
	f.t.Helper()
	got, err := f.s.ChildRuns(f.ctx, store.TaskKey{Run: id, Step: stepA})
	if err != nil {
		f.t.Fatalf("ChildRuns: %v", err)
	}
	return got
}

// claimElements claims every queued element task, in input (index) order.
func (f *fixture) claimElements() []store.ClaimedTask {
	f.t.Helper()
	claimed := f.claim(100, func(c *store.Claim) { c.Versions = []string{"elem@v1"} })
	slices.SortFunc(claimed, func(a, b store.ClaimedTask) int { return slices.Compare(a.Input, b.Input) })
	return claimed
}

func testSpawnWaitsForEveryChild(t *testing.T, f *fixture) {
	id, _ := f.spawnFromA(3)
	if got := f.task(id, stepA).Status; got != store.TaskWaiting {
		t.Fatalf("spawning step A left it %s, want WAITING", got)
	}
	kids := f.children(id)
	if len(kids) != 3 {
		t.Fatalf("ChildRuns = %d runs, want 3", len(kids))
	}
	for i, k := range kids {
		if k.Parent == nil || *k.Parent != (store.ParentRun{ID: id, StepIndex: stepA, Index: i}) || string(k.Input) != fmt.Sprint(i) {
			t.Errorf("child %d = parent %+v input %s", i, k.Parent, k.Input)
		}
		if run := f.run(k.ID); !cmp.Equal(run.Parent, k.Parent) {
			t.Errorf("GetRun(child %d).Parent = %+v, want %+v", i, run.Parent, k.Parent)
		}
	}
	claimed := f.claimElements()
	if len(claimed) != 3 {
		t.Fatalf("claimed %d element tasks, want 3", len(claimed))
	}
	for _, c := range claimed[:2] {
		f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(c), Output: []byte(`{"v":` + string(c.Input) + `}`)}}})
	}
	if got := f.task(id, stepA).Status; got != store.TaskWaiting {
		t.Fatalf("with one child left step A is %s, want WAITING", got)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Fatalf("claimed %v while a child runs", keys(got))
	}
	f.tick(1)
	f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(claimed[2]), Output: []byte(`{"v":2}`)}}})
	woken := f.claimOne(id, stepA)
	if !woken.Woken || woken.Attempt != 1 {
		t.Errorf("step A claimed again with Woken %v attempt %d, want woken in attempt 1", woken.Woken, woken.Attempt)
	}
	if got, want := f.trail(id, stepA), []store.EventType{store.EventQueued, store.EventWaiting, store.EventWoken}; !slices.Equal(got, want) {
		t.Errorf("events of step A = %v, want %v", got, want)
	}
	for i, k := range f.children(id) {
		if k.Status != store.RunCompleted || len(k.Tasks) != 1 || string(k.Tasks[0].Output) != fmt.Sprintf(`{"v":%d}`, i) {
			t.Errorf("child %d: %s with tasks %+v", i, k.Status, k.Tasks)
		}
	}
}

func testSpawnNothing(t *testing.T, f *fixture) {
	id, _ := f.spawnFromA(0)
	if got := f.claimOne(id, stepA); !got.Woken {
		t.Errorf("a task that spawned no runs was claimed again not woken")
	}
	if kids := f.children(id); len(kids) != 0 {
		t.Errorf("ChildRuns = %d runs, want none", len(kids))
	}
	if _, err := f.s.ChildRuns(f.ctx, store.TaskKey{Run: uuid.Must(uuid.NewV7())}); err == nil {
		t.Errorf("ChildRuns of an unknown run did not fail")
	}
}

func testSpawnStale(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{kindA: store.KindMap})
	a := f.claimOne(id, stepA)
	gone := attempt(a)
	gone.Attempt++
	res := f.finish(store.Results{Spawns: []store.Spawn{{Attempt: gone, Runs: elementRuns(2)}}})
	if len(res.Stale) != 1 {
		t.Errorf("a spawn for another attempt was not stale: %+v", res)
	}
	if kids := f.children(id); len(kids) != 0 {
		t.Errorf("a stale spawn created %d runs", len(kids))
	}
}

func testChildFailureWakesAtOnce(t *testing.T, f *fixture) {
	id, _ := f.spawnFromA(3)
	claimed := f.claimElements()
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(claimed[0]), Error: "boom"}}})
	if got := f.claimOne(id, stepA); !got.Woken {
		t.Fatalf("step A not woken after a child failed")
	}
	failed := 0
	for _, k := range f.children(id) {
		switch k.Status {
		case store.RunFailed:
			failed++
		case store.RunRunning:
		default:
			t.Errorf("child %d is %s", k.Parent.Index, k.Status)
		}
	}
	if failed != 1 {
		t.Errorf("%d children failed, want 1", failed)
	}
}

func testParentEndCancelsChildren(t *testing.T, f *fixture) {
	for _, how := range []string{"cancel", "fail"} {
		t.Run(how, func(t *testing.T) {
			id, _ := f.spawnFromA(2)
			claimed := f.claimElements()
			// A grandchild: the first element spawns a run of its own.
			f.finish(store.Results{Spawns: []store.Spawn{{Attempt: attempt(claimed[0]), Runs: elementRuns(1)}}})
			grand, err := f.s.ChildRuns(f.ctx, claimed[0].Key)
			if err != nil || len(grand) != 1 {
				t.Fatalf("ChildRuns of the element = %d runs, %v", len(grand), err)
			}
			f.tick(1)
			switch how {
			case "cancel":
				if ok, err := f.cancelOne(id, f.now); !ok || err != nil {
					t.Fatalf("CancelRuns = %v, %v", ok, err)
				}
			case "fail":
				// Cancelling the second child wakes step A, which fails for
				// good: the run fails, which must cancel the first child and
				// its own child.
				if ok, err := f.cancelOne(f.children(id)[1].ID, f.now); !ok || err != nil {
					t.Fatalf("CancelRuns(child) = %v, %v", ok, err)
				}
				woken := f.claimOne(id, stepA)
				f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(woken), Error: "a child was cancelled"}}})
				if got := f.run(id).Status; got != store.RunFailed {
					t.Fatalf("parent run is %s, want FAILED", got)
				}
			}
			grand, err = f.s.ChildRuns(f.ctx, claimed[0].Key)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range append(f.children(id), grand...) {
				if k.Status != store.RunCancelled {
					t.Errorf("child run at index %d is %s, want CANCELLED", k.Parent.Index, k.Status)
				}
				for _, tk := range k.Tasks {
					if tk.Status != store.TaskCancelled {
						t.Errorf("a task of a cancelled child run is %s", tk.Status)
					}
				}
			}
			if got := f.claimElements(); len(got) != 0 {
				t.Errorf("claimed %v after the parent ended", keys(got))
			}
		})
	}
}

func testReleaseWokenParent(t *testing.T, f *fixture) {
	id, _ := f.spawnFromA(0)
	woken := f.claimOne(id, stepA)
	res, err := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{attempt(woken)}, Reason: "stopping", Now: f.now})
	if err != nil || len(res.Requeued) != 1 {
		t.Fatalf("ReleaseTasks = %+v, %v", res, err)
	}
	again := f.claimOne(id, stepA)
	if !again.Woken || again.Attempt != woken.Attempt || again.PriorAttempts != woken.PriorAttempts {
		t.Errorf("released woken task claimed as %+v, want woken in the same attempt", again)
	}
}

// testChildRunPreviews: a listing that nests child runs beneath their
// parents pages over the runs no step started, and previews each
// parent's child runs, counted by status, the first few by index.
func testChildRunPreviews(t *testing.T, f *fixture) {
	id, _ := f.spawnFromA(5)
	f.tick(1)
	other := f.createDiamond(runOpts{})
	kids := f.children(id)

	if got, want := ids(f.listRuns(store.RunQuery{TopLevel: true})), []uuid.UUID{other, id}; !slices.Equal(got, want) {
		t.Errorf("ListRuns(TopLevel) = %v, want %v and %v only", got, other, id)
	}
	if got := f.listRuns(store.RunQuery{}); len(got) != 7 {
		t.Errorf("ListRuns = %d runs, want 7 (the child runs too)", len(got))
	}
	if got := f.listRuns(store.RunQuery{TopLevel: true, Workflow: "elem"}); len(got) != 0 {
		t.Errorf("ListRuns(TopLevel, elem) = %d runs, want none", len(got))
	}

	claimed := f.claimElements()
	f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(claimed[3]), Output: []byte(`{}`)}}})

	got, err := f.s.ChildRunPreviews(f.ctx, []uuid.UUID{other, id, id, uuid.Must(uuid.NewV7())}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Parent != id {
		t.Fatalf("ChildRunPreviews = %+v, want one preview, of run %s", got, id)
	}
	p := got[0]
	if want := map[store.RunStatus]int{store.RunRunning: 4, store.RunCompleted: 1}; !cmp.Equal(p.Counts, want) || p.Total() != 5 {
		t.Errorf("Counts = %v (total %d), want %v", p.Counts, p.Total(), want)
	}
	if len(p.First) != 3 {
		t.Fatalf("First = %d runs, want 3", len(p.First))
	}
	for i, r := range p.First {
		if r.ID != kids[i].ID || r.Parent == nil || r.Parent.Index != i || r.Input != nil || r.Workflow != "elem" {
			t.Errorf("First[%d] = %+v, want child %s at index %d without its input", i, r, kids[i].ID, i)
		}
	}
	if none, err := f.s.ChildRunPreviews(f.ctx, nil, 3); err != nil || len(none) != 0 {
		t.Errorf("ChildRunPreviews(no parents) = %v, %v", none, err)
	}
}
