package storetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// testReadManyRuns: RunStatuses and GetRuns read many runs at once, and
// agree with GetRun and ListTasks; unknown ids are left out.
func testReadManyRuns(t *testing.T, f *fixture) {
	// Each run is driven while its tasks are the only ones queued.
	completed := f.createDiamond(runOpts{})
	f.complete(f.claimOne(completed, stepA), `{"v":2}`)
	for _, c := range f.claim(10) {
		f.complete(c, `{}`)
	}
	f.complete(f.claimOne(completed, stepD), `{"done":true}`)
	failed := f.createDiamond(runOpts{})
	a := f.claimOne(failed, stepA)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(a), Error: "boom"}}})
	f.claimOne(failed, stepH) // its failure handler, running
	running := f.createDiamond(runOpts{tenant: "acme", key: "k1"})
	f.complete(f.claimOne(running, stepA), `{"v":1}`)
	unknown := uuid.Must(uuid.NewV7())

	ids := []uuid.UUID{failed, unknown, running, completed}
	statuses, err := f.s.RunStatuses(f.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uuid.UUID]store.RunStatus{running: store.RunRunning, completed: store.RunCompleted, failed: store.RunFailed}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("RunStatuses (-want +got):\n%s", diff)
	}

	got, err := f.s.GetRuns(f.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	known := []uuid.UUID{running, completed, failed}
	slices.SortFunc(known, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	var wantRuns []store.RunWithTasks
	for _, id := range known {
		tasks, err := f.s.ListTasks(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantRuns = append(wantRuns, store.RunWithTasks{Run: f.run(id), Tasks: tasks})
	}
	if diff := cmp.Diff(wantRuns, got, cmpTimes); diff != "" {
		t.Errorf("GetRuns (-GetRun and ListTasks +GetRuns):\n%s", diff)
	}

	for _, none := range [][]uuid.UUID{nil, {unknown}} {
		if st, err := f.s.RunStatuses(f.ctx, none); err != nil || len(st) != 0 {
			t.Errorf("RunStatuses(%v) = %v, %v; want nothing", none, st, err)
		}
		if runs, err := f.s.GetRuns(f.ctx, none); err != nil || len(runs) != 0 {
			t.Errorf("GetRuns(%v) = %v, %v; want nothing", none, runs, err)
		}
	}
}
