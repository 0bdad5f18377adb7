package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// purge calls PurgeRuns and returns how many runs it deleted (or, with
// DryRun, counted).
func (f *fixture) purge(p store.Purge) int {
	f.t.Helper()
	res, err := f.s.PurgeRuns(f.ctx, p)
	if err != nil {
		f.t.Fatalf("PurgeRuns(%+v): %v", p, err)
	}
	return res.Runs
}

// failRun makes a new diamond run fail at its first step, and lets its
// failure handler complete (when handled): a FAILED run with no live
// work. The queue must be empty.
func (f *fixture) failRun(o runOpts, handled bool) uuid.UUID {
	f.t.Helper()
	id := f.createDiamond(o)
	a := f.claimOne(id, stepA)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(a), Error: "boom"}}})
	if handled {
		f.complete(f.claimOne(id, stepH), `{}`)
	}
	if r := f.run(id); r.Status != store.RunFailed {
		f.t.Fatalf("run %s is %s, want FAILED", id, r.Status)
	}
	return id
}

// cancelRun makes a new diamond run and cancels it.
func (f *fixture) cancelRun(o runOpts) uuid.UUID {
	f.t.Helper()
	id := f.createDiamond(o)
	if ok, err := f.cancelOne(id, f.now); err != nil || !ok {
		f.t.Fatalf("CancelRuns = %v, %v", ok, err)
	}
	return id
}

// doneRun makes a new diamond run and completes it.
func (f *fixture) doneRun(o runOpts) uuid.UUID {
	f.t.Helper()
	id := f.createDiamond(o)
	f.completeRun(id)
	return id
}

// gone checks that nothing of a run can be read any more: the run, its
// tasks, its events, its place in listings.
func (f *fixture) gone(id uuid.UUID) {
	f.t.Helper()
	if _, err := f.s.GetRun(f.ctx, id); !errors.Is(err, store.ErrNotFound) {
		f.t.Errorf("GetRun(purged %s) = %v, want ErrNotFound", id, err)
	}
	if tasks, err := f.s.ListTasks(f.ctx, id); !errors.Is(err, store.ErrNotFound) {
		f.t.Errorf("ListTasks(purged %s) = %d tasks, %v; want ErrNotFound", id, len(tasks), err)
	}
	if evs, err := f.s.ListEvents(f.ctx, id); !errors.Is(err, store.ErrNotFound) {
		f.t.Errorf("ListEvents(purged %s) = %d events, %v; want ErrNotFound", id, len(evs), err)
	}
	if got, err := f.s.GetRuns(f.ctx, []uuid.UUID{id}); err != nil || len(got) != 0 {
		f.t.Errorf("GetRuns(purged %s) = %v, %v; want nothing", id, got, err)
	}
	if slices.Contains(ids(f.listRuns(store.RunQuery{Limit: 1000})), id) {
		f.t.Errorf("ListRuns lists purged run %s", id)
	}
}

// kept checks that a run is whole: the run, its five tasks and its
// events.
func (f *fixture) kept(id uuid.UUID) {
	f.t.Helper()
	if _, err := f.s.GetRun(f.ctx, id); err != nil {
		f.t.Errorf("GetRun(%s) = %v, want the run kept", id, err)
		return
	}
	if n := len(f.statuses(id)); n != len(stepNames) {
		f.t.Errorf("run %s has %d tasks, want %d", id, n, len(stepNames))
	}
	if len(f.events(id)) == 0 {
		f.t.Errorf("run %s has no events", id)
	}
}

func testPurgeByStatusAndAge(t *testing.T, f *fixture) {
	t0 := f.now
	completed := f.doneRun(runOpts{key: "order-1"})
	failed := f.failRun(runOpts{}, true)
	cancelled := f.cancelRun(runOpts{})
	f.tick(time.Hour)
	recent := f.doneRun(runOpts{})
	running := f.createDiamond(runOpts{}) // its root stays queued

	cutoff := t0.Add(time.Minute)
	if n := f.purge(store.Purge{Status: store.RunCompleted, FinishedBefore: cutoff}); n != 1 {
		t.Errorf("purging COMPLETED runs before %v deleted %d, want the old one", cutoff, n)
	}
	f.gone(completed)
	for _, id := range []uuid.UUID{failed, cancelled, running, recent} {
		f.kept(id)
	}
	// A run that finished at the cutoff is kept: FinishedBefore excludes it.
	if n := f.purge(store.Purge{Status: store.RunCompleted, FinishedBefore: f.now}); n != 0 {
		t.Errorf("purging before the recent run's end deleted %d, want 0", n)
	}
	f.kept(recent)
	if n := f.purge(store.Purge{Status: store.RunFailed, FinishedBefore: cutoff}); n != 1 {
		t.Errorf("purging FAILED runs deleted %d, want 1", n)
	}
	f.gone(failed)
	if n := f.purge(store.Purge{Status: store.RunCancelled, FinishedBefore: cutoff}); n != 1 {
		t.Errorf("purging CANCELLED runs deleted %d, want 1", n)
	}
	f.gone(cancelled)
	// The running run lost nothing: its root is still claimed next.
	f.kept(running)
	f.claimOne(running, stepA)
	if _, err := f.s.PurgeRuns(f.ctx, store.Purge{Status: store.RunRunning, FinishedBefore: f.now}); !errors.Is(err, store.ErrInvalidData) {
		t.Errorf("PurgeRuns(RUNNING) = %v, want ErrInvalidData", err)
	}
	// The purged run's idempotency key is free again.
	if again := f.create(runOpts{key: "order-1"}); !again.Created || again.ID == completed {
		t.Errorf("a run with the purged run's key = %+v, want a new run", again)
	}
}

func testPurgeFilters(t *testing.T, f *fixture) {
	acme := f.doneRun(runOpts{tenant: "acme"})
	beta := f.doneRun(runOpts{tenant: "beta"})
	other := f.doneRun(runOpts{tenant: "acme", workflow: "other"})
	tagged := f.doneRun(runOpts{tenant: "acme", tags: map[string]string{"customer": "acme", "channel": "web"}})
	f.tick(time.Minute)
	if n := f.purge(store.Purge{Status: store.RunCompleted, FinishedBefore: f.now, Tags: map[string]string{"customer": "acme", "channel": "api"}, DryRun: true}); n != 0 {
		t.Errorf("a dry run by tags no run carries counted %d runs", n)
	}
	tests := []struct {
		p    store.Purge
		gone uuid.UUID
	}{
		{store.Purge{Tags: map[string]string{"channel": "web"}}, tagged},
		{store.Purge{Workflow: "other"}, other},
		{store.Purge{Tenant: "beta"}, beta},
		{store.Purge{Workflow: "diamond", Tenant: "acme"}, acme},
	}
	left := []uuid.UUID{acme, beta, other}
	for _, tt := range tests {
		tt.p.Status, tt.p.FinishedBefore = store.RunCompleted, f.now
		if n := f.purge(tt.p); n != 1 {
			t.Errorf("PurgeRuns(%+v) deleted %d, want 1", tt.p, n)
		}
		f.gone(tt.gone)
		left = slices.DeleteFunc(left, func(id uuid.UUID) bool { return id == tt.gone })
		for _, id := range left {
			f.kept(id)
		}
	}
}

func testPurgeKeepsLiveHandler(t *testing.T, f *fixture) {
	id := f.failRun(runOpts{}, false) // its handler is QUEUED
	f.tick(time.Hour)
	p := store.Purge{Status: store.RunFailed, FinishedBefore: f.now}
	if n := f.purge(p); n != 0 {
		t.Errorf("purge deleted %d runs with a queued failure handler", n)
	}
	if n := f.purge(store.Purge{Status: store.RunFailed, FinishedBefore: f.now, DryRun: true}); n != 0 {
		t.Errorf("a dry run counted %d runs with a queued failure handler", n)
	}
	h := f.claimOne(id, stepH)
	if n := f.purge(p); n != 0 {
		t.Errorf("purge deleted %d runs with a running failure handler", n)
	}
	f.kept(id)
	// The handler's result still lands, and then the run may go.
	if res := f.complete(h, `{}`); len(res.Stale) != 0 {
		t.Fatalf("the handler's result was dropped: %v", res.Stale)
	}
	if got := f.statuses(id)[stepH]; got != store.TaskCompleted {
		t.Fatalf("handler = %s, want COMPLETED", got)
	}
	if n := f.purge(p); n != 1 {
		t.Errorf("purge deleted %d runs once the handler completed, want 1", n)
	}
	f.gone(id)
}

func testPurgeDryRunAndLimit(t *testing.T, f *fixture) {
	var runs []uuid.UUID // in the order they finished
	for range 5 {
		runs = append(runs, f.doneRun(runOpts{}))
		f.tick(time.Minute)
	}
	all := store.Purge{Status: store.RunCompleted, FinishedBefore: f.now}
	dry := all
	dry.DryRun, dry.Limit = true, 2
	if n := f.purge(dry); n != 5 {
		t.Errorf("a dry run with limit 2 counted %d, want all 5", n)
	}
	for _, id := range runs {
		f.kept(id)
	}
	limited := all
	limited.Limit = 2
	if n := f.purge(limited); n != 2 {
		t.Errorf("purge with limit 2 deleted %d", n)
	}
	f.gone(runs[0])
	f.gone(runs[1])
	for _, id := range runs[2:] {
		f.kept(id)
	}
	if n := f.purge(limited); n != 2 {
		t.Errorf("second purge with limit 2 deleted %d", n)
	}
	f.gone(runs[2])
	f.gone(runs[3])
	f.kept(runs[4])
	if n := f.purge(all); n != 1 {
		t.Errorf("purge without limit deleted %d, want the last one", n)
	}
	f.gone(runs[4])
	if n := f.purge(all); n != 0 {
		t.Errorf("purging an empty history deleted %d", n)
	}
}

// testPurgeRacesRetry retries each of a number of failed runs while a
// purge of that run (the only one of its tenant) runs at the same time:
// each retry either wins (the run runs again and is not purged) or finds
// the run gone (and leaves it out), and every run ends whole or entirely gone.
func testPurgeRacesRetry(t *testing.T, f *fixture) {
	const n = 30
	runs := make([]uuid.UUID, n)
	for i := range runs {
		runs[i] = f.failRun(runOpts{tenant: fmt.Sprintf("tenant-%d", i)}, true)
	}
	f.tick(time.Hour)
	reset := []store.ResetTask{{Step: stepA}, {Step: stepB, Pending: 1}, {Step: stepC, Pending: 1}, {Step: stepD, Pending: 2}, {Step: stepH}}
	retried := make([]bool, n)
	for i, id := range runs {
		var wg sync.WaitGroup
		var retryErr, purgeErr error
		var ok bool
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			ok, retryErr = f.retryOne(id, f.now, reset...)
		}()
		go func() {
			defer wg.Done()
			<-start
			_, purgeErr = f.s.PurgeRuns(f.ctx, store.Purge{Status: store.RunFailed, FinishedBefore: f.now, Tenant: fmt.Sprintf("tenant-%d", i)})
		}()
		close(start)
		wg.Wait()
		switch {
		case purgeErr != nil:
			t.Errorf("run %d: PurgeRuns: %v", i, purgeErr)
		case retryErr != nil:
			t.Errorf("run %d: RetryRuns: %v", i, retryErr)
		case !ok:
			if _, err := f.s.GetRun(f.ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("run %d: RetryRuns refused a FAILED run that exists (GetRun: %v)", i, err)
			}
		default:
			retried[i] = true
		}
	}
	// Whatever the purge left FAILED goes now.
	f.purge(store.Purge{Status: store.RunFailed, FinishedBefore: f.now})
	got, err := f.s.GetRuns(f.ctx, runs)
	if err != nil {
		t.Fatal(err)
	}
	left := map[uuid.UUID]store.RunWithTasks{}
	for _, r := range got {
		left[r.ID] = r
	}
	for i, id := range runs {
		r, ok := left[id]
		if ok != retried[i] {
			t.Errorf("run %d: retried %v but kept %v", i, retried[i], ok)
			continue
		}
		if !ok {
			f.gone(id)
			continue
		}
		want := []store.TaskStatus{store.TaskQueued, store.TaskPending, store.TaskPending, store.TaskPending, store.TaskPending}
		var st []store.TaskStatus
		for _, tk := range r.Tasks {
			st = append(st, tk.Status)
		}
		if r.Status != store.RunRunning || !cmp.Equal(st, want) {
			t.Errorf("retried run %d = %s with tasks %v, want RUNNING with %v", i, r.Status, st, want)
		}
	}
	t.Logf("%d of %d runs were retried before the purge took them", len(left), n)
}
