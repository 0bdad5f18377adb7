package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// The rules these check are on store.HandOff.

// completeHandingOff completes tasks of the diamond, offering up to limit
// of the children they make ready to worker w1.
func (f *fixture) completeHandingOff(limit int, versions []string, cs ...store.ClaimedTask) store.FinishResult {
	f.t.Helper()
	r := store.Results{HandOff: store.HandOff{Worker: "w1", Versions: versions, Limit: limit}}
	for _, c := range cs {
		r.Completions = append(r.Completions, store.Completion{
			Attempt: attempt(c), Output: []byte(`{"from":"` + stepNames[c.Key.Step] + `"}`), Children: diamondChildren[c.Key.Step],
		})
	}
	return f.finish(r)
}

func testHandOffGoesOn(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{traceContext: "00-trace"})
	a := f.claimOne(id, stepA)
	f.tick(time.Second)
	res := f.completeHandingOff(5, nil, a)
	// B is plain and goes to the worker; C may be skipped, so it is queued.
	if len(res.HandedOff) != 1 {
		t.Fatalf("handed off %v, want step b", keys(res.HandedOff))
	}
	b := res.HandedOff[0]
	if b.Key != (store.TaskKey{Run: id, Step: stepB}) || b.Attempt != 1 || b.Kind != store.KindCode || !b.Plain || b.Woken {
		t.Errorf("handed off %+v, want step b's first attempt, plain", b)
	}
	if b.Workflow != "diamond" || b.Version != "diamond@v1" || b.Tenant != "default" ||
		string(b.Input) != `{"n":1}` || b.TraceContext != "00-trace" {
		t.Errorf("handed-off task's run facts: %+v", b)
	}
	if !b.QueuedAt.Equal(f.now) {
		t.Errorf("handed-off task queued at %v, want %v (its parent's completion)", b.QueuedAt, f.now)
	}
	if len(b.Parents) != 1 || b.Parents[0].Step != stepA || b.Parents[0].Status != store.TaskCompleted ||
		string(b.Parents[0].Output) != `{"from":"a"}` {
		t.Errorf("handed-off task's parents: %+v, want a's output", b.Parents)
	}
	if got := f.task(id, stepB); got.Status != store.TaskRunning || got.Worker != "w1" || got.Attempt != 1 {
		t.Errorf("step b is %s for %q in attempt %d, want RUNNING for w1 in attempt 1", got.Status, got.Worker, got.Attempt)
	}
	if got := f.trail(id, stepB); !slices.Equal(got, []store.EventType{store.EventQueued, store.EventStarted}) {
		t.Errorf("step b's events: %v, want QUEUED, STARTED", got)
	}
	leases, err := f.s.Heartbeat(f.ctx, "w1", f.now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(leases, func(l store.Lease) bool { return l.Attempt == attempt(b) }) {
		t.Errorf("w1 holds %v, want step b's lease among them", leases)
	}
	// Only C is left to claim.
	c := f.claimOne(id, stepC)
	if got := f.claim(5); len(got) != 0 {
		t.Errorf("claimed %v after C, want nothing (B was handed off)", keys(got))
	}

	// B completes first; D waits for C, whose completion hands it off
	// with both parents' outputs: B's recorded before, C's in the batch.
	f.tick(time.Second)
	if res := f.completeHandingOff(5, nil, b); len(res.HandedOff) != 0 {
		t.Errorf("B's completion handed off %v, want nothing (D waits for C)", keys(res.HandedOff))
	}
	f.tick(time.Second)
	res = f.completeHandingOff(5, nil, c)
	if len(res.HandedOff) != 1 || res.HandedOff[0].Key.Step != stepD {
		t.Fatalf("C's completion handed off %v, want step d", keys(res.HandedOff))
	}
	d := res.HandedOff[0]
	want := []store.ParentOutput{
		{Step: stepB, Status: store.TaskCompleted, Output: []byte(`{"from":"b"}`)},
		{Step: stepC, Status: store.TaskCompleted, Output: []byte(`{"from":"c"}`)},
	}
	if !slices.EqualFunc(d.Parents, want, func(x, y store.ParentOutput) bool {
		return x.Step == y.Step && x.Status == y.Status && string(x.Output) == string(y.Output)
	}) {
		t.Errorf("step d's parents: %+v, want B's and C's outputs", d.Parents)
	}
	if res := f.completeHandingOff(5, nil, d); len(res.Finished) != 1 || res.Finished[0] != id {
		t.Errorf("D's completion finished %v, want the run", res.Finished)
	}
	if got := f.run(id).Status; got != store.RunCompleted {
		t.Errorf("run is %s, want COMPLETED", got)
	}
}

func testHandOffOnlyAtTheFront(t *testing.T, f *fixture) {
	// start creates a run and claims its root.
	start := func(o runOpts) store.ClaimedTask {
		t.Helper()
		id := f.createDiamond(o)
		return f.claimOne(id, stepA)
	}
	handed := func(what string, res store.FinishResult, want int) {
		t.Helper()
		if len(res.HandedOff) != want {
			t.Errorf("%s: handed off %v, want %d", what, keys(res.HandedOff), want)
		}
		f.claimOrder() // empty the queue for the next case
	}

	a := start(runOpts{tenant: "acme"})
	f.createDiamond(runOpts{tenant: "globex"})
	handed("another tenant's task first in the queue", f.completeHandingOff(5, nil, a), 0)

	a = start(runOpts{tenant: "acme"})
	f.createDiamond(runOpts{tenant: "globex", workflow: "other"})
	handed("another tenant's task first, of a workflow the worker does not run",
		f.completeHandingOff(5, []string{"diamond@v1"}, a), 1)

	a = start(runOpts{tenant: "acme"})
	handed("a workflow the worker does not run", f.completeHandingOff(5, []string{"other@v1"}, a), 0)

	a = start(runOpts{tenant: "acme"})
	handed("a version of the workflow the worker does not serve", f.completeHandingOff(5, []string{"diamond@v2"}, a), 0)

	a = start(runOpts{tenant: "acme"})
	f.createDiamond(runOpts{tenant: "globex", version: "diamond@v2"})
	handed("another tenant's task first in the queue, of a version the worker does not serve",
		f.completeHandingOff(5, []string{"diamond@v1"}, a), 1)

	a = start(runOpts{tenant: "acme"})
	f.createDiamond(runOpts{tenant: "acme", priority: spec.PriorityHigh})
	handed("the tenant's higher-priority run queued", f.completeHandingOff(5, nil, a), 0)

	a = start(runOpts{tenant: "acme"})
	f.createDiamond(runOpts{tenant: "acme"})
	handed("the tenant's new run queued (runs in progress go first)", f.completeHandingOff(5, nil, a), 1)

	a = start(runOpts{tenant: "acme"})
	other := start(runOpts{tenant: "acme"})
	f.complete(other, `{}`) // queues its B and C, in a's lane
	handed("the tenant's tasks of the same lane queued", f.completeHandingOff(5, nil, a), 1)

	first, second := start(runOpts{tenant: "acme"}), start(runOpts{tenant: "acme"})
	handed("two ready, a limit of one", f.completeHandingOff(1, nil, first, second), 1)

	a = start(runOpts{tenant: "acme"})
	handed("no limit", f.completeHandingOff(0, nil, a), 0)
}

func testHandOffNotLimited(t *testing.T, f *fixture) {
	for _, c := range []struct {
		what string
		set  func(*store.NewTask)
	}{
		{"a concurrency limit", func(nt *store.NewTask) { nt.Limit = store.Limit{Key: "k", Max: 5} }},
		{"a rate limit", func(nt *store.NewTask) { nt.Rate = store.Rate{Key: "k", Interval: time.Second, Burst: 5} }},
	} {
		id := uuid.Must(uuid.NewV7())
		tasks := diamondTasks(1)
		c.set(&tasks[stepB])
		if _, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: []store.NewRun{{
			ID: id, Workflow: "diamond", Version: "diamond@v1", Tenant: "default", Input: []byte(`{}`), Tasks: tasks,
		}}}); err != nil {
			t.Fatal(err)
		}
		a := f.claimOne(id, stepA)
		if res := f.completeHandingOff(5, nil, a); len(res.HandedOff) != 0 {
			t.Errorf("a task with %s was handed off", c.what)
		}
		f.claimOrder()
	}
}
