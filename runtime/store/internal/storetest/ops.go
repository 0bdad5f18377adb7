package storetest

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// createBatch creates n diamond runs in one call, so that they share their
// creation time, and returns their ids.
func (f *fixture) createBatch(n int, o runOpts) []uuid.UUID {
	f.t.Helper()
	runs := make([]store.NewRun, n)
	for i := range runs {
		runs[i] = store.NewRun{
			ID: uuid.Must(uuid.NewV7()), Workflow: o.workflow, Version: o.workflow + "@v1", Tenant: o.tenant,
			Input: []byte(`{}`), Tasks: diamondTasks(1),
		}
	}
	res, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: runs})
	if err != nil {
		f.t.Fatalf("CreateRuns: %v", err)
	}
	ids := make([]uuid.UUID, n)
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

// completeRun runs every task of a diamond run to completion; the run's
// tasks must be the only ones queued.
func (f *fixture) completeRun(id uuid.UUID) {
	f.t.Helper()
	for range 4 {
		got := f.claim(10)
		if len(got) == 0 {
			break
		}
		for _, c := range got {
			f.complete(c, `{}`)
		}
	}
	if r := f.run(id); r.Status != store.RunCompleted {
		f.t.Fatalf("run %s is %s, want COMPLETED", id, r.Status)
	}
}

func (f *fixture) listRuns(q store.RunQuery) []store.Run {
	f.t.Helper()
	runs, err := f.s.ListRuns(f.ctx, q)
	if err != nil {
		f.t.Fatalf("ListRuns(%+v): %v", q, err)
	}
	return runs
}

func ids(runs []store.Run) []uuid.UUID {
	out := make([]uuid.UUID, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// newestFirst orders ids of runs created together as listings do.
func newestFirst(ids ...uuid.UUID) []uuid.UUID {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(b[:], a[:]) })
	return ids
}

func testListRuns(t *testing.T, f *fixture) {
	t0 := f.now
	// Seven runs of two workflows and two tenants, in every status, three
	// of them created together.
	completed := f.createDiamond(runOpts{tenant: "acme"})
	f.completeRun(completed)
	f.tick(time.Minute)
	failed := f.createDiamond(runOpts{tenant: "acme", key: "order-2"})
	a := f.claimOne(failed, stepA)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(a), Error: "boom"}}})
	f.tick(time.Minute)
	cancelled := f.createDiamond(runOpts{tenant: "beta", workflow: "other"})
	if ok, err := f.cancelOne(cancelled, f.now); err != nil || !ok {
		t.Fatalf("CancelRuns = %v, %v", ok, err)
	}
	f.tick(time.Minute)
	batch := f.createBatch(3, runOpts{tenant: "beta", workflow: "diamond"})
	f.tick(time.Minute)
	latest := f.createDiamond(runOpts{tenant: "acme", workflow: "other", key: "order-7"})
	tied := newestFirst(batch...)
	all := slices.Concat([]uuid.UUID{latest}, tied, []uuid.UUID{cancelled, failed, completed})

	tests := []struct {
		name string
		q    store.RunQuery
		want []uuid.UUID
	}{
		{"everything, newest first", store.RunQuery{}, all},
		{"workflow", store.RunQuery{Workflow: "other"}, []uuid.UUID{latest, cancelled}},
		{"tenant", store.RunQuery{Tenant: "acme"}, []uuid.UUID{latest, failed, completed}},
		{"status", store.RunQuery{Statuses: []store.RunStatus{store.RunRunning}}, slices.Concat([]uuid.UUID{latest}, tied)},
		{"statuses", store.RunQuery{Statuses: []store.RunStatus{store.RunCancelled, store.RunFailed}}, []uuid.UUID{cancelled, failed}},
		{"completed", store.RunQuery{Statuses: []store.RunStatus{store.RunCompleted}}, []uuid.UUID{completed}},
		{"idempotency key", store.RunQuery{IdempotencyKey: "order-2"}, []uuid.UUID{failed}},
		{"time range: from inclusive, to exclusive", store.RunQuery{CreatedFrom: t0.Add(time.Minute), CreatedTo: t0.Add(3 * time.Minute)}, []uuid.UUID{cancelled, failed}},
		{"filters combine", store.RunQuery{Workflow: "diamond", Tenant: "beta", Statuses: []store.RunStatus{store.RunRunning, store.RunFailed}}, tied},
		{"no match", store.RunQuery{Workflow: "nope"}, []uuid.UUID{}},
		{"limit", store.RunQuery{Limit: 2}, all[:2]},
		{"limit over several statuses", store.RunQuery{Limit: 3, Statuses: []store.RunStatus{store.RunRunning, store.RunCompleted}}, slices.Concat([]uuid.UUID{latest}, tied[:2])},
		{"after a cursor within a tie", store.RunQuery{After: &store.RunCursor{CreatedAt: t0.Add(3 * time.Minute), ID: tied[0]}}, all[2:]},
		{"after a cursor, filtered", store.RunQuery{Tenant: "acme", After: &store.RunCursor{CreatedAt: t0.Add(time.Minute), ID: failed}}, []uuid.UUID{completed}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ids(f.listRuns(tt.q))); diff != "" {
			t.Errorf("%s: ListRuns(%+v) (-want +got):\n%s", tt.name, tt.q, diff)
		}
	}

	// A listed run has its facts, but not its input.
	got := f.listRuns(store.RunQuery{IdempotencyKey: "order-2"})
	want := store.Run{
		ID: failed, Workflow: "diamond", Version: "diamond@v1", Tenant: "acme", IdempotencyKey: "order-2", Priority: spec.PriorityNormal,
		Status: store.RunFailed, Failure: &store.RunFailure{StepIndex: stepA, Error: "boom"}, CreatedAt: t0.Add(time.Minute), FinishedAt: t0.Add(time.Minute),
	}
	if diff := cmp.Diff([]store.Run{want}, got, cmpTimes); diff != "" {
		t.Errorf("listed run (-want +got):\n%s", diff)
	}
	if r := f.listRuns(store.RunQuery{Statuses: []store.RunStatus{store.RunRunning}, Limit: 1})[0]; r.Failure != nil || !r.FinishedAt.IsZero() {
		t.Errorf("running run listed with failure %+v, finished at %v", r.Failure, r.FinishedAt)
	}
}

// testListRunsPages walks a listing a page at a time: every run comes
// exactly once, in order, also when many share a creation time and a
// page ends within them, and runs created meanwhile do not disturb it.
func testListRunsPages(t *testing.T, f *fixture) {
	var want []uuid.UUID
	for _, n := range []int{1, 7, 2, 9, 1} {
		want = slices.Concat(newestFirst(f.createBatch(n, runOpts{tenant: "acme", workflow: "diamond"})...), want)
		f.tick(time.Millisecond)
	}
	for _, limit := range []int{1, 3, 4, 20} {
		var got, meanwhile []uuid.UUID
		q := store.RunQuery{Limit: limit}
		for page := 0; ; page++ {
			runs := f.listRuns(q)
			if len(runs) > limit {
				t.Fatalf("limit %d: page %d has %d runs", limit, page, len(runs))
			}
			if len(runs) == 0 {
				break
			}
			got = append(got, ids(runs)...)
			c := store.CursorOf(runs[len(runs)-1])
			q.After = &c
			if page == 0 {
				// Runs created after the listing began come before its
				// cursor: the walk never sees them.
				meanwhile = f.createBatch(2, runOpts{tenant: "acme", workflow: "diamond"})
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("limit %d: pages (-want +got):\n%s", limit, diff)
		}
		want = slices.Concat(newestFirst(meanwhile...), want)
		f.tick(time.Millisecond)
	}
}

func testListWorkers(t *testing.T, f *fixture) {
	if got, err := f.s.ListWorkers(f.ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListWorkers on an empty store = %v, %v", got, err)
	}
	id := f.createDiamond(runOpts{})
	f.claimOne(id, stepA) // by w1
	first := f.now
	if _, err := f.s.Heartbeat(f.ctx, "w1", first); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Heartbeat(f.ctx, "w2", f.tick(time.Second)); err != nil {
		t.Fatal(err)
	}
	list := func() []store.Worker {
		t.Helper()
		got, err := f.s.ListWorkers(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []store.Worker{{ID: "w1", HeartbeatAt: first, Leases: 1}, {ID: "w2", HeartbeatAt: f.now}}
	if diff := cmp.Diff(want, list(), cmpTimes); diff != "" {
		t.Errorf("workers without a leader (-want +got):\n%s", diff)
	}
	leader := f.s.Leadership("w2")
	t.Cleanup(func() { _ = leader.Resign(f.ctx) })
	if ok, err := leader.TryLead(f.ctx); err != nil || !ok {
		t.Fatalf("TryLead = %v, %v", ok, err)
	}
	want[1].Leader = true
	if diff := cmp.Diff(want, list(), cmpTimes); diff != "" {
		t.Errorf("workers with w2 leading (-want +got):\n%s", diff)
	}
	if err := leader.Resign(f.ctx); err != nil {
		t.Fatal(err)
	}
	other := f.s.Leadership("w1")
	t.Cleanup(func() { _ = other.Resign(f.ctx) })
	if ok, err := other.TryLead(f.ctx); err != nil || !ok {
		t.Fatalf("TryLead after resigning = %v, %v", ok, err)
	}
	want[0].Leader, want[1].Leader = true, false
	if diff := cmp.Diff(want, list(), cmpTimes); diff != "" {
		t.Errorf("workers after w1 took over (-want +got):\n%s", diff)
	}
	// What a worker announces replaces what it announced before; an
	// announcement heartbeats, a later heartbeat keeps it, and a new
	// worker's is its first heartbeat.
	if err := f.s.AnnounceWorker(f.ctx, "w2", []string{"b@2", "a@1"}, []string{"zone=a"}, f.tick(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AnnounceWorker(f.ctx, "w2", []string{"c@3", "a@1"}, []string{"region=eu", "gpu=a100"}, f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Heartbeat(f.ctx, "w2", f.now); err != nil {
		t.Fatal(err)
	}
	if err := f.s.AnnounceWorker(f.ctx, "w3", nil, nil, f.now); err != nil {
		t.Fatal(err)
	}
	want[1].HeartbeatAt, want[1].Versions = f.now, []string{"a@1", "c@3"}
	want[1].Labels = []string{"gpu=a100", "region=eu"}
	want = append(want, store.Worker{ID: "w3", HeartbeatAt: f.now})
	if diff := cmp.Diff(want, list(), cmpTimes); diff != "" {
		t.Errorf("workers after announcements (-want +got):\n%s", diff)
	}
}

func testQueueStats(t *testing.T, f *fixture) {
	stats := func() []store.QueueStat {
		t.Helper()
		got, err := f.s.QueueStats(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := stats(); len(got) != 0 {
		t.Fatalf("QueueStats on an empty store = %v", got)
	}
	t0 := f.now
	first := f.createDiamond(runOpts{tenant: "acme"})
	f.tick(time.Minute)
	f.createDiamond(runOpts{tenant: "acme"})
	f.tick(time.Minute)
	f.createDiamond(runOpts{tenant: "beta", workflow: "other"})
	// acme's first root goes first (fair order: acme, beta, acme).
	f.claimOne(first, stepA)
	want := []store.QueueStat{
		{Tenant: "acme", Workflow: "diamond", Queued: 1, Running: 1, OldestQueuedAt: t0.Add(time.Minute)},
		{Tenant: "beta", Workflow: "other", Queued: 1, OldestQueuedAt: t0.Add(2 * time.Minute)},
	}
	if diff := cmp.Diff(want, stats(), cmpTimes); diff != "" {
		t.Errorf("QueueStats (-want +got):\n%s", diff)
	}
	// A group with nothing queued is listed while it has tasks running.
	f.claim(1)
	want[1] = store.QueueStat{Tenant: "beta", Workflow: "other", Running: 1}
	if diff := cmp.Diff(want, stats(), cmpTimes); diff != "" {
		t.Errorf("QueueStats with beta's task claimed (-want +got):\n%s", diff)
	}
	// Tasks waiting for a slot of their concurrency limit are queued, and
	// held.
	one := store.Limit{Key: "customer=c1", Max: 1}
	f.tick(time.Minute)
	f.createDiamond(runOpts{tenant: "gamma", limit: one})
	f.createDiamond(runOpts{tenant: "gamma", limit: one})
	f.createDiamond(runOpts{tenant: "gamma", limit: one})
	want = append(want, store.QueueStat{Tenant: "gamma", Workflow: "diamond", Queued: 3, Held: 2, OldestQueuedAt: t0.Add(3 * time.Minute)})
	if diff := cmp.Diff(want, stats(), cmpTimes); diff != "" {
		t.Errorf("QueueStats with runs waiting for a concurrency slot (-want +got):\n%s", diff)
	}
}

func testListWorkflows(t *testing.T, f *fixture) {
	t0 := f.now
	save := func(name, version string, at time.Time) store.WorkflowVersion {
		t.Helper()
		w := store.WorkflowVersion{Version: version, Name: name, Spec: []byte(`{"name":"` + name + `"}`), SavedAt: at}
		if err := f.s.SaveWorkflow(f.ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	b1 := save("b", "b@v1", t0)
	a1 := save("a", "a@v1", t0)
	a2 := save("a", "a@v2", t0.Add(time.Hour))
	save("a", "a@v1", t0.Add(2*time.Hour)) // saved again: a no-op, the first time stays
	got, err := f.s.ListWorkflows(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.WorkflowVersion{a2, a1, b1}, got, cmpTimes); diff != "" {
		t.Errorf("ListWorkflows (-want +got):\n%s", diff)
	}
}

// testListRunsByInput selects runs by documents their input contains,
// as Postgres's jsonb @> does, and reads inputs when asked to.
func testListRunsByInput(t *testing.T, f *fixture) {
	inputs := []string{
		`{"tier":"gold","n":5,"address":{"country":"NL"},"tags":["a","b"]}`,
		`{"tier":"silver","n":5.0,"address":{"country":"BE","city":"Ghent"}}`,
		`{"tier":"gold","n":7, "note":"spaces kept"}`,
		`{}`,
	}
	runs := make([]uuid.UUID, len(inputs))
	for i, in := range inputs {
		runs[i] = f.createDiamond(runOpts{input: in})
		f.tick(time.Second)
	}
	docs := func(ss ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(ss))
		for i, s := range ss {
			out[i] = json.RawMessage(s)
		}
		return out
	}
	tests := []struct {
		name string
		docs []json.RawMessage
		want []uuid.UUID
	}{
		{"a field", docs(`{"tier":"gold"}`), []uuid.UUID{runs[2], runs[0]}},
		{"numbers by value", docs(`{"n":5}`), []uuid.UUID{runs[1], runs[0]}},
		{"a nested field", docs(`{"address":{"country":"NL"}}`), []uuid.UUID{runs[0]}},
		{"fields combine", docs(`{"tier":"gold","n":7}`), []uuid.UUID{runs[2]}},
		{"any document", docs(`{"tier":"silver"}`, `{"n":7}`), []uuid.UUID{runs[2], runs[1]}},
		{"an array element", docs(`{"tags":["b"]}`), []uuid.UUID{runs[0]}},
		{"the empty document: every input", docs(`{}`), []uuid.UUID{runs[3], runs[2], runs[1], runs[0]}},
		{"no match", docs(`{"tier":"bronze"}`), []uuid.UUID{}},
	}
	for _, tt := range tests {
		got := f.listRuns(store.RunQuery{InputContains: tt.docs})
		if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
			t.Errorf("%s: ListRuns(InputContains %s) (-want +got):\n%s", tt.name, tt.docs, diff)
		}
		for _, r := range got {
			if r.Input != nil {
				t.Errorf("%s: run %s listed with its input %s, not asked for", tt.name, r.ID, r.Input)
			}
		}
	}
	// A scan reads a bounded window, returns the runs in it that match,
	// and where it stopped.
	gold := docs(`{"tier":"gold"}`)
	runsScanned, reached, err := f.s.ScanRuns(f.ctx, store.RunQuery{InputContains: gold, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uuid.UUID{runs[2]}, ids(runsScanned)); diff != "" || reached == nil || reached.ID != runs[2] {
		t.Errorf("ScanRuns(gold, 2) = %v, reached %v; want run 2 and the position of run 2 (-want +got):\n%s", ids(runsScanned), reached, diff)
	}
	runsScanned, reached, err = f.s.ScanRuns(f.ctx, store.RunQuery{InputContains: gold, Limit: 2, After: reached, WithInput: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uuid.UUID{runs[0]}, ids(runsScanned)); diff != "" || reached == nil || reached.ID != runs[0] ||
		string(runsScanned[0].Input) != inputs[0] {
		t.Errorf("ScanRuns(gold, 2, after) = %v %q, reached %v; want run 0 with its input, and its position (-want +got):\n%s",
			ids(runsScanned), inputsOf(runsScanned), reached, diff)
	}
	runsScanned, reached, err = f.s.ScanRuns(f.ctx, store.RunQuery{Limit: 2, After: reached})
	if err != nil || len(runsScanned) != 0 || reached != nil {
		t.Errorf("ScanRuns past the end = %v, %v, %v; want nothing and the end", ids(runsScanned), reached, err)
	}
	runsScanned, _, err = f.s.ScanRuns(f.ctx, store.RunQuery{Limit: 10, Statuses: []store.RunStatus{store.RunRunning, store.RunFailed}})
	if diff := cmp.Diff([]uuid.UUID{runs[3], runs[2], runs[1], runs[0]}, ids(runsScanned)); err != nil || diff != "" {
		t.Errorf("ScanRuns over two statuses: %v (-want +got):\n%s", err, diff)
	}

	got := f.listRuns(store.RunQuery{WithInput: true, Limit: 2})
	if len(got) != 2 || string(got[0].Input) != inputs[3] || string(got[1].Input) != inputs[2] {
		t.Errorf("ListRuns(WithInput) inputs = %q, want %q and %q as written", inputsOf(got), inputs[3], inputs[2])
	}
}

func inputsOf(runs []store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = string(r.Input)
	}
	return out
}

func testListRunsFinished(t *testing.T, f *fixture) {
	t0 := f.now
	// An old run that fails now, a new one that fails now, an old one
	// that completed long ago, and a new one still running.
	oldDone := f.createDiamond(runOpts{tenant: "acme"})
	f.completeRun(oldDone)
	oldFailing := f.createDiamond(runOpts{})
	f.tick(2 * time.Hour)
	newFailing := f.createDiamond(runOpts{})
	running := f.createDiamond(runOpts{tenant: "acme"})
	_ = running
	for _, c := range f.claim(10) {
		if c.Key.Run == oldFailing || c.Key.Run == newFailing {
			f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(c), Error: "boom"}}})
		}
	}
	hourAgo := f.now.Add(-time.Hour)
	tests := []struct {
		name string
		q    store.RunQuery
		want []uuid.UUID
	}{
		{"finished in the last hour, whenever created", store.RunQuery{FinishedFrom: hourAgo}, []uuid.UUID{newFailing, oldFailing}},
		{"failed in the last hour", store.RunQuery{FinishedFrom: hourAgo, Statuses: []store.RunStatus{store.RunFailed}}, []uuid.UUID{newFailing, oldFailing}},
		{"completed in the last hour", store.RunQuery{FinishedFrom: hourAgo, Statuses: []store.RunStatus{store.RunCompleted}}, []uuid.UUID{}},
		{"created in the last hour, for contrast", store.RunQuery{CreatedFrom: hourAgo, Statuses: []store.RunStatus{store.RunFailed}}, []uuid.UUID{newFailing}},
		{"finished since the start", store.RunQuery{FinishedFrom: t0, Tenant: "acme"}, []uuid.UUID{oldDone}},
		{"finished, paged", store.RunQuery{FinishedFrom: hourAgo, Limit: 1}, []uuid.UUID{newFailing}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ids(f.listRuns(tt.q))); diff != "" {
			t.Errorf("%s: ListRuns(%+v) (-want +got):\n%s", tt.name, tt.q, diff)
		}
	}
}

// testListRunsByOddInput: inputs that json holds and jsonb refuses (the
// escape \u0000, a number beyond numeric's range) are compared like any
// other, and never fail a listing.
func testListRunsByOddInput(t *testing.T, f *fixture) {
	inputs := []string{
		`{"tier":"gold","note":"a\u0000b"}`,
		`{"tier":"gold","n":1e200000}`,
		`{"tier":"silver","n":1e999999999}`, // never expanded
		`{"tier":"gold","s":"\u0000"}`,
		`{"tier":"silver"}`,
	}
	runs := make([]uuid.UUID, len(inputs))
	for i, in := range inputs {
		runs[i] = f.createDiamond(runOpts{input: in})
		f.tick(time.Second)
	}
	for _, tt := range []struct {
		doc  string
		want []uuid.UUID
	}{
		{`{"tier":"gold"}`, []uuid.UUID{runs[3], runs[1], runs[0]}},
		{`{"note":"a\u0000b"}`, []uuid.UUID{runs[0]}},
		{`{"n":1e200000}`, []uuid.UUID{runs[1]}},
		{`{"n":5}`, []uuid.UUID{}},
	} {
		got := f.listRuns(store.RunQuery{InputContains: []json.RawMessage{json.RawMessage(tt.doc)}})
		if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
			t.Errorf("ListRuns(InputContains %s) (-want +got):\n%s", tt.doc, diff)
		}
		for _, r := range got {
			if r.Input != nil {
				t.Errorf("run %s listed with its input %s, not asked for", r.ID, r.Input)
			}
		}
	}
	scanned, reached, err := f.s.ScanRuns(f.ctx, store.RunQuery{InputContains: []json.RawMessage{json.RawMessage(`{"tier":"gold"}`)}, Limit: 3, WithInput: true})
	if err != nil || reached == nil || reached.ID != runs[2] {
		t.Fatalf("ScanRuns(gold, 3) = %v, reached %v, %v; want the position of run 2", ids(scanned), reached, err)
	}
	if diff := cmp.Diff([]uuid.UUID{runs[3]}, ids(scanned)); diff != "" || string(scanned[0].Input) != inputs[3] {
		t.Errorf("ScanRuns(gold, 3) = %q; want run 3 with its input (-want +got):\n%s", inputsOf(scanned), diff)
	}
}

func testQueueSteps(t *testing.T, f *fixture) {
	steps := func(tenant, workflow string) []store.QueueStepStat {
		t.Helper()
		got, err := f.s.QueueSteps(f.ctx, tenant, workflow)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := steps("acme", "diamond"); len(got) != 0 {
		t.Fatalf("QueueSteps on an empty store = %v", got)
	}
	t0 := f.now
	first := f.createDiamond(runOpts{tenant: "acme"})
	f.tick(time.Minute)
	f.createDiamond(runOpts{tenant: "acme"})
	f.createDiamond(runOpts{tenant: "beta"})                    // another tenant
	f.createDiamond(runOpts{tenant: "acme", workflow: "other"}) // another workflow
	// The first run's A completes: its B and C are queued.
	f.complete(f.claimOne(first, stepA), `{}`)
	f.tick(time.Minute)
	// Runs of one key, one at a time: two of their As wait for a slot.
	one := store.Limit{Key: "customer=c1", Max: 1}
	for range 3 {
		f.createDiamond(runOpts{tenant: "acme", limit: one})
	}
	want := []store.QueueStepStat{
		{Version: "diamond@v1", Step: stepA, Queued: 4, Held: 2, OldestQueuedAt: t0.Add(time.Minute)},
		{Version: "diamond@v1", Step: stepB, Queued: 1, OldestQueuedAt: t0.Add(time.Minute)},
		{Version: "diamond@v1", Step: stepC, Queued: 1, OldestQueuedAt: t0.Add(time.Minute)},
	}
	if diff := cmp.Diff(want, steps("acme", "diamond"), cmpTimes); diff != "" {
		t.Errorf("QueueSteps (-want +got):\n%s", diff)
	}
	if got := steps("acme", "nothing"); len(got) != 0 {
		t.Errorf("QueueSteps of a workflow with nothing queued = %v", got)
	}

	// Runs of a rate limit: one starts, the others are put off until
	// their turn, queued and paced.
	perMinute := store.Rate{Key: "gateway", Interval: time.Minute, Burst: 1}
	for range 3 {
		f.createDiamond(runOpts{tenant: "delta", workflow: "paced", rate: perMinute})
	}
	if got := f.claim(3, func(c *store.Claim) { c.Versions = []string{"paced@v1"} }); len(got) != 1 {
		t.Fatalf("claimed %d tasks of the rate-limited runs, want 1", len(got))
	}
	wantPaced := []store.QueueStepStat{{Version: "paced@v1", Step: stepA, Queued: 2, Paced: 2, OldestQueuedAt: f.now}}
	if diff := cmp.Diff(wantPaced, steps("delta", "paced"), cmpTimes); diff != "" {
		t.Errorf("QueueSteps of runs put off by a rate limit (-want +got):\n%s", diff)
	}
	stats, err := f.s.QueueStats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(stats, func(s store.QueueStat) bool { return s.Tenant == "delta" })
	if i < 0 || stats[i] != (store.QueueStat{Tenant: "delta", Workflow: "paced", Queued: 2, Running: 1, Paced: 2}) {
		t.Errorf("QueueStats of runs put off by a rate limit: %+v", stats)
	}
}

// testInFlight counts the runs in progress by version and, per step,
// those whose task has not ended; finished runs do not count.
func testInFlight(t *testing.T, f *fixture) {
	inFlight := func(limit int) ([]store.VersionInFlight, bool) {
		t.Helper()
		got, more, err := f.s.InFlight(f.ctx, limit)
		if err != nil {
			t.Fatal(err)
		}
		return got, more
	}
	if got, more := inFlight(0); len(got) != 0 || more {
		t.Fatalf("InFlight on an empty store = %v, %v", got, more)
	}
	stored := store.WorkflowVersion{Version: "diamond@v1", Name: "diamond", Spec: []byte(`{"name":"diamond"}`), SavedAt: f.now}
	if err := f.s.SaveWorkflow(f.ctx, stored); err != nil {
		t.Fatal(err)
	}
	first := f.createDiamond(runOpts{})
	f.createDiamond(runOpts{})
	f.complete(f.claimOne(first, stepA), `{}`)
	f.createDiamond(runOpts{workflow: "other"}) // its version is not stored
	gone := f.createDiamond(runOpts{workflow: "gone"})
	if ok, err := f.cancelOne(gone, f.now); err != nil || !ok {
		t.Fatalf("cancelling a run: %v, %v", ok, err)
	}
	want := []store.VersionInFlight{
		{Version: stored, Runs: 2, Steps: []store.StepInFlight{
			{Step: stepA, Runs: 1}, {Step: stepB, Runs: 2}, {Step: stepC, Runs: 2}, {Step: stepD, Runs: 2}, {Step: stepH, Runs: 2},
		}},
		{Version: store.WorkflowVersion{Version: "other@v1", Name: "other"}, Runs: 1, Steps: []store.StepInFlight{
			{Step: stepA, Runs: 1}, {Step: stepB, Runs: 1}, {Step: stepC, Runs: 1}, {Step: stepD, Runs: 1}, {Step: stepH, Runs: 1},
		}},
	}
	got, more := inFlight(0)
	if diff := cmp.Diff(want, got, cmpTimes); diff != "" || more {
		t.Errorf("InFlight (-want +got):\n%s\nmore %v", diff, more)
	}
	got, more = inFlight(1)
	if diff := cmp.Diff(want[:1], got, cmpTimes); diff != "" || !more {
		t.Errorf("InFlight(1) (-want +got):\n%s\nmore %v, want true", diff, more)
	}
}
