package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Worker labels (store.Claim.Labels): a task that needs labels is
// claimed only by a worker whose labels include them; others pass it
// over without stalling the tasks behind it.

var (
	gpu        = []string{"gpu=a100"}
	gpuWorker  = func(p *store.Claim) { p.Worker, p.Labels = "gpu", []string{"gpu=a100", "region=eu"} }
	otherValue = func(p *store.Claim) { p.Worker, p.Labels = "other", []string{"gpu=t4", "region=eu"} }
)

func testLabelsRouteClaims(t *testing.T, f *fixture) {
	labelled := f.createDiamond(runOpts{labelsA: gpu})
	plain := f.createDiamond(runOpts{})
	// A worker without labels, or with another value, takes the plain
	// root, queued behind the labelled one, and leaves that queued.
	if got := runsOf(f.claim(5)); !slices.Equal(got, []uuid.UUID{plain}) {
		t.Fatalf("an unlabelled worker claimed roots of %v, want only the plain run %v", got, plain)
	}
	if got := f.claim(5, otherValue); len(got) != 0 {
		t.Fatalf("a worker with gpu=t4 claimed %v, want nothing (the task needs gpu=a100)", keys(got))
	}
	// A capped claim filters alike.
	if got := f.claim(5, func(p *store.Claim) { p.TenantLimit = 10 }); len(got) != 0 {
		t.Fatalf("an unlabelled capped claim took %v, want nothing", keys(got))
	}
	got := f.claim(5, gpuWorker)
	if len(got) != 1 || got[0].Key != (store.TaskKey{Run: labelled, Step: stepA}) {
		t.Fatalf("the gpu worker claimed %v, want the labelled root", keys(got))
	}
	if task := f.task(labelled, stepA); task.Worker != "gpu" {
		t.Errorf("the labelled root runs on %q, want gpu", task.Worker)
	}
}

func testLabelsRequeued(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{labelsA: gpu, labelsB: gpu, maxAttempts: 3})
	a := f.claim(1, gpuWorker)
	if len(a) != 1 {
		t.Fatalf("the gpu worker claimed %v, want the root", keys(a))
	}
	// Handed back, the root is queued again with its labels.
	f.tick(time.Second)
	if _, err := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "gpu", Attempts: []store.Attempt{attempt(a[0])}, Reason: "stopping", Now: f.now}); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(5); len(got) != 0 {
		t.Fatalf("after a release, an unlabelled worker claimed %v", keys(got))
	}
	// Recovered from a dead worker, likewise.
	if a = f.claim(1, gpuWorker); len(a) != 1 {
		t.Fatalf("the gpu worker claimed %v, want the root handed back", keys(a))
	}
	f.tick(time.Minute)
	res, err := f.s.RecoverTasks(f.ctx, store.Recover{StaleBefore: f.now, Limit: 10, Now: f.now})
	if err != nil || len(res.Requeued) == 0 {
		t.Fatalf("RecoverTasks = %+v, %v; want the root recovered", res, err)
	}
	f.tick(time.Hour)
	if _, err := f.fire(f.now, 10); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(5); len(got) != 0 {
		t.Fatalf("after recovery, an unlabelled worker claimed %v", keys(got))
	}
	a = f.claim(1, gpuWorker)
	if len(a) != 1 {
		t.Fatalf("after recovery, the gpu worker claimed %v, want the root", keys(a))
	}
	// Its children queue on completion: B with its labels, C without.
	f.complete(a[0], `{}`)
	if got := f.claim(5); len(got) != 1 || got[0].Key.Step != stepC {
		t.Fatalf("an unlabelled worker claimed %v, want only step c", keys(got))
	}
	if got := f.claim(5, gpuWorker); len(got) != 1 || got[0].Key != (store.TaskKey{Run: id, Step: stepB}) {
		t.Fatalf("the gpu worker claimed %v, want step b", keys(got))
	}
}

func testLabelsHandOff(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{labelsB: gpu})
	a := f.claimOne(id, stepA)
	// B needs gpu: the unlabelled worker recording A gets nothing handed
	// off, and B waits in the queue for a gpu worker.
	if res := f.completeHandingOff(5, nil, a); len(res.HandedOff) != 0 {
		t.Fatalf("handed off %v to an unlabelled worker, want nothing", keys(res.HandedOff))
	}
	if got := f.claim(5, gpuWorker); !slices.ContainsFunc(got, func(c store.ClaimedTask) bool { return c.Key.Step == stepB }) {
		t.Fatalf("the gpu worker claimed %v, want step b among them", keys(got))
	}

	// A gpu worker recording A gets B handed off.
	id = f.createDiamond(runOpts{labelsB: gpu})
	a = f.claimOne(id, stepA)
	res := f.finish(store.Results{HandOff: store.HandOff{Worker: "gpu", Labels: []string{"gpu=a100"}, Limit: 5},
		Completions: []store.Completion{{Attempt: attempt(a), Output: []byte(`{}`), Children: diamondChildren[stepA]}}})
	if len(res.HandedOff) != 1 || res.HandedOff[0].Key != (store.TaskKey{Run: id, Step: stepB}) {
		t.Fatalf("handed off %v to the gpu worker, want step b", keys(res.HandedOff))
	}

	// An unlabelled worker is not held back from a hand-off by a labelled
	// task of another tenant at the head of the queue, which it could
	// not claim.
	f.claim(100, gpuWorker) // an empty queue first
	f.createDiamond(runOpts{tenant: "other", labelsA: gpu})
	id = f.createDiamond(runOpts{})
	a = f.claimOne(id, stepA)
	if res := f.completeHandingOff(5, nil, a); len(res.HandedOff) != 1 {
		t.Errorf("handed off %v, want step b: the head of the queue needs labels the worker lacks", keys(res.HandedOff))
	}
}

func testLabelsFair(t *testing.T, f *fixture) {
	// Tenant B queues a backlog of labelled tasks, then tenant A queues a
	// labelled task and a plain one: an unlabelled worker takes A's plain
	// task at once, passing over every labelled task ahead of it, and a
	// gpu worker takes A's labelled task within the first claims, not
	// after B's backlog.
	for range 50 {
		f.createDiamond(runOpts{tenant: "B", labelsA: gpu})
	}
	labelled := f.createDiamond(runOpts{tenant: "A", labelsA: gpu})
	plain := f.createDiamond(runOpts{tenant: "A"})
	if got := runsOf(f.claim(1)); !slices.Equal(got, []uuid.UUID{plain}) {
		t.Fatalf("an unlabelled worker claimed %v, want tenant A's plain run at once", got)
	}
	position := -1
	for i := range 50 {
		c := f.claim(1, gpuWorker)
		if len(c) == 1 && c[0].Key.Run == labelled {
			position = i
			break
		}
	}
	if position < 0 || position > 1 {
		t.Errorf("tenant A's labelled task was claimed at position %d by the gpu worker, want 0 or 1", position)
	}
}

func testUnserved(t *testing.T, f *fixture) {
	unserved := func() []store.Unserved {
		t.Helper()
		got, err := f.s.Unserved(f.ctx, store.UnservedQuery{AliveSince: f.now.Add(-time.Minute), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	t0 := f.now
	f.createDiamond(runOpts{labelsA: gpu})
	f.tick(time.Second)
	f.createDiamond(runOpts{labelsA: gpu})
	f.createDiamond(runOpts{workflow: "other", labelsA: []string{"gpu=a100", "region=eu"}})
	f.createDiamond(runOpts{}) // needs nothing: never unserved
	want := []store.Unserved{
		{Workflow: "diamond", Labels: gpu, Tasks: 2, OldestQueuedAt: t0},
		{Workflow: "other", Labels: []string{"gpu=a100", "region=eu"}, Tasks: 1, OldestQueuedAt: f.now},
	}
	if diff := cmp.Diff(want, unserved(), cmpTimes); diff != "" {
		t.Errorf("unserved with no workers (-want +got):\n%s", diff)
	}
	// A live worker with gpu=a100 serves the diamonds, not the other's
	// region; one that has not heartbeated for long serves nothing.
	if err := f.s.AnnounceWorker(f.ctx, "old", nil, []string{"gpu=a100", "region=eu"}, f.now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AnnounceWorker(f.ctx, "gpu", nil, []string{"gpu=a100", "zone=b"}, f.now); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[1:], unserved(), cmpTimes); diff != "" {
		t.Errorf("unserved with a live gpu worker (-want +got):\n%s", diff)
	}
	if got, err := f.s.Unserved(f.ctx, store.UnservedQuery{AliveSince: f.now, Limit: 0}); err != nil || len(got) != 0 {
		t.Errorf("Unserved with no limit = %v, %v; want nothing", got, err)
	}
}
