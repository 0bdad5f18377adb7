package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The facts the engine's metrics and traces read from a store: how deep
// the queue is, when a claimed task was queued, how late a timer fired,
// and the trace a run belongs to.

func testQueueDepth(t *testing.T, f *fixture) {
	depth := func(tenants int) store.QueueDepth {
		t.Helper()
		d, err := f.s.QueueDepth(f.ctx, tenants)
		if err != nil {
			t.Fatalf("QueueDepth: %v", err)
		}
		return d
	}
	if diff := cmp.Diff(store.QueueDepth{}, depth(10)); diff != "" {
		t.Errorf("empty store (-want +got):\n%s", diff)
	}
	var acme []uuid.UUID
	for range 3 {
		acme = append(acme, f.createDiamond(runOpts{tenant: "acme"}))
	}
	f.createDiamond(runOpts{tenant: "initech"})
	f.createDiamond(runOpts{tenant: "globex"})
	f.createDiamond(runOpts{tenant: "globex"})
	want := store.QueueDepth{Queued: 6, Tenants: []store.TenantDepth{
		{Tenant: "acme", Queued: 3}, {Tenant: "globex", Queued: 2}, {Tenant: "initech", Queued: 1},
	}}
	if diff := cmp.Diff(want, depth(10)); diff != "" {
		t.Errorf("six roots queued (-want +got):\n%s", diff)
	}
	// The first round of a fair claim takes one task of each tenant.
	claimed := f.claim(3)
	want = store.QueueDepth{Queued: 3, Running: 3, Tenants: []store.TenantDepth{
		{Tenant: "acme", Queued: 2, Running: 1}, {Tenant: "globex", Queued: 1, Running: 1},
	}}
	if diff := cmp.Diff(want, depth(2)); diff != "" {
		t.Errorf("after claiming 3, the 2 deepest tenants (-want +got):\n%s", diff)
	}
	// Ties go to the tenant with more running, then by name.
	if ok, err := f.cancelOne(acme[2], f.now); !ok || err != nil {
		t.Fatalf("CancelRuns = %v, %v", ok, err)
	}
	want = store.QueueDepth{Queued: 2, Running: 3, Tenants: []store.TenantDepth{
		{Tenant: "acme", Queued: 1, Running: 1}, {Tenant: "globex", Queued: 1, Running: 1}, {Tenant: "initech", Running: 1},
	}}
	if diff := cmp.Diff(want, depth(5)); diff != "" {
		t.Errorf("after cancelling a queued run (-want +got):\n%s", diff)
	}
	// A completion queues the task's children and ends its running.
	for _, c := range claimed {
		if c.Tenant == "initech" {
			f.complete(c, `{}`)
		}
	}
	want = store.QueueDepth{Queued: 4, Running: 2}
	if diff := cmp.Diff(want, depth(0)); diff != "" {
		t.Errorf("totals only (-want +got):\n%s", diff)
	}
}

func testTraceContext(t *testing.T, f *fixture) {
	const tc = "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ntracestate: vendor=x"
	traced := f.createDiamond(runOpts{traceContext: tc})
	plain := f.createDiamond(runOpts{})
	if got := f.run(traced).TraceContext; got != tc {
		t.Errorf("GetRun: trace context %q, want %q", got, tc)
	}
	if got := f.run(plain).TraceContext; got != "" {
		t.Errorf("GetRun of a run without one: trace context %q", got)
	}
	runs, err := f.s.GetRuns(f.ctx, []uuid.UUID{traced, plain})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if want := map[uuid.UUID]string{traced: tc}[r.ID]; r.TraceContext != want {
			t.Errorf("GetRuns: run %s has trace context %q, want %q", r.ID, r.TraceContext, want)
		}
	}
	// Claims carry it, so that the worker needs no other read; the
	// children of a task too.
	for _, c := range f.claim(10) {
		if want := map[uuid.UUID]string{traced: tc}[c.Key.Run]; c.TraceContext != want {
			t.Errorf("claim of run %s: trace context %q, want %q", c.Key.Run, c.TraceContext, want)
		}
		f.complete(c, `{}`)
	}
	for _, c := range f.claim(10) {
		if want := map[uuid.UUID]string{traced: tc}[c.Key.Run]; c.TraceContext != want {
			t.Errorf("claim of step %d of run %s: trace context %q, want %q", c.Key.Step, c.Key.Run, c.TraceContext, want)
		}
	}
}

func testQueuedAt(t *testing.T, f *fixture) {
	created := f.now
	id := f.createDiamond(runOpts{maxAttempts: 2})
	f.tick(5 * time.Second)
	a := f.claimOne(id, stepA)
	if !a.QueuedAt.Equal(created) {
		t.Errorf("root claimed with QueuedAt %v, want its run's creation %v", a.QueuedAt, created)
	}
	completed := f.tick(time.Second)
	f.complete(a, `{}`)
	f.tick(3 * time.Second)
	for _, c := range f.claim(10) {
		if !c.QueuedAt.Equal(completed) {
			t.Errorf("child %d claimed with QueuedAt %v, want its parent's completion %v", c.Key.Step, c.QueuedAt, completed)
		}
		if c.Key.Step != stepB {
			continue
		}
		// A retried task is queued again when its timer fires.
		at := f.now.Add(time.Minute)
		f.finish(store.Results{Retries: []store.Retry{{Attempt: attempt(c), Error: "flaky", At: at}}})
		fired := at.Add(2 * time.Second)
		if n, err := f.fire(fired, 10); n != 1 || err != nil {
			t.Fatalf("FireTimers = %d, %v", n, err)
		}
		f.now = fired.Add(time.Second)
		again := f.claimOne(id, stepB)
		if !again.QueuedAt.Equal(fired) {
			t.Errorf("retry claimed with QueuedAt %v, want when its timer fired %v", again.QueuedAt, fired)
		}
	}
}

func testFiredTimers(t *testing.T, f *fixture) {
	retried := f.createDiamond(runOpts{maxAttempts: 2})
	slept := f.createDiamond(runOpts{})
	var retryAt, wakeAt time.Time
	for _, c := range f.claim(10) {
		switch c.Key.Run {
		case retried:
			retryAt = f.now.Add(time.Minute)
			f.finish(store.Results{Retries: []store.Retry{{Attempt: attempt(c), Error: "flaky", At: retryAt}}})
		case slept:
			wakeAt = f.now.Add(time.Hour)
			f.finish(store.Results{Sleeps: []store.Sleep{{Attempt: attempt(c), For: time.Hour}}})
		}
	}
	fired, err := f.s.FireTimers(f.ctx, wakeAt.Add(3*time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[store.TaskKey]store.FiredTimer{
		{Run: retried, Step: stepA}: {Key: store.TaskKey{Run: retried, Step: stepA}, Due: retryAt,
			Workflow: "diamond", Version: "diamond@v1", Tenant: "default"},
		{Run: slept, Step: stepA}: {Key: store.TaskKey{Run: slept, Step: stepA}, Sleep: true, Due: wakeAt,
			Workflow: "diamond", Version: "diamond@v1", Tenant: "default"},
	}
	got := map[store.TaskKey]store.FiredTimer{}
	for _, ft := range fired {
		got[ft.Key] = ft
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(time.Time.Equal)); diff != "" {
		t.Errorf("fired timers (-want +got):\n%s", diff)
	}
	if again, err := f.s.FireTimers(f.ctx, wakeAt.Add(time.Hour), 10); len(again) != 0 || err != nil {
		t.Errorf("FireTimers again = %v, %v; want nothing", again, err)
	}
}
