// Package storetest is the conformance suite of the store port: every
// behaviour a store promises is specified here once and run against each
// adapter (memstore in its own tests, pgstore in its own). A new adapter
// is correct when Run passes.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Factory returns a store with no runs in it, for one test.
type Factory func(t *testing.T) store.Store

// The diamond workflow the suite runs: a -> (b, c) -> d, plus a failure
// handler h. Step indexes:
const (
	stepA = iota
	stepB
	stepC
	stepD
	stepH
)

var diamondChildren = [][]int{stepA: {stepB, stepC}, stepB: {stepD}, stepC: {stepD}, stepD: nil, stepH: nil}

type fixture struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
	now time.Time
}

func newFixture(t *testing.T, factory Factory) *fixture {
	return &fixture{
		t: t, s: factory(t), ctx: t.Context(),
		now: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC),
	}
}

// tick moves the fixture's notion of now.
func (f *fixture) tick(d time.Duration) time.Time {
	f.now = f.now.Add(d)
	return f.now
}

type runOpts struct {
	tenant, workflow, key string
	maxAttempts           int
	priority              int         // 0: the store's default, PriorityNormal
	limit                 store.Limit // of the root, step A
	rate                  store.Rate  // of the root, step A
	runLimit              store.RunLimit
	debounce              store.Debounce
	traceContext          string
	version               string     // workflow@v1 when empty
	input                 string     // {"n":1} when empty
	kindA                 store.Kind // of the root, step A: code unless set
	tags                  map[string]string
	startAt               time.Time     // NewRun.StartAt
	timeout               time.Duration // NewRun.Timeout
	labelsA, labelsB      []string      // the worker labels steps A and B need
}

func (f *fixture) createDiamond(o runOpts) uuid.UUID {
	f.t.Helper()
	res := f.create(o)
	if !res.Created {
		f.t.Fatalf("CreateRuns did not create a run")
	}
	return res.ID
}

// diamondTasks are the tasks of a diamond run.
func diamondTasks(maxAttempts int) []store.NewTask {
	return []store.NewTask{
		{Step: stepA, Kind: store.KindCode, Pending: 0, Plain: true, MaxAttempts: maxAttempts},
		{Step: stepB, Kind: store.KindCode, Parents: []int{stepA}, Pending: 1, Plain: true, MaxAttempts: maxAttempts},
		{Step: stepC, Kind: store.KindCode, Parents: []int{stepA}, Pending: 1, Plain: false, MaxAttempts: maxAttempts},
		{Step: stepD, Kind: store.KindCode, Parents: []int{stepB, stepC}, Pending: 2, Plain: true, MaxAttempts: maxAttempts},
		{Step: stepH, Kind: store.KindOnFailure, Pending: 0, MaxAttempts: 1},
	}
}

func (f *fixture) create(o runOpts) store.CreateRunResult {
	f.t.Helper()
	if o.tenant == "" {
		o.tenant = "default"
	}
	if o.workflow == "" {
		o.workflow = "diamond"
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = 1
	}
	if o.input == "" {
		o.input = `{"n":1}`
	}
	if o.version == "" {
		o.version = o.workflow + "@v1"
	}
	id := uuid.Must(uuid.NewV7())
	tasks := diamondTasks(o.maxAttempts)
	tasks[stepA].Limit = o.limit
	tasks[stepA].Rate = o.rate
	tasks[stepA].Labels, tasks[stepB].Labels = o.labelsA, o.labelsB
	if o.kindA != store.KindCode {
		tasks[stepA].Kind, tasks[stepA].Plain = o.kindA, false
	}
	res, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: []store.NewRun{{
		ID: id, Workflow: o.workflow, Version: o.version, Tenant: o.tenant,
		IdempotencyKey: o.key, Priority: o.priority, Input: []byte(o.input), TraceContext: o.traceContext, Tags: o.tags, Tasks: tasks,
		StartAt: o.startAt, Timeout: o.timeout, RunLimit: o.runLimit, Debounce: o.debounce,
	}}})
	if err != nil {
		f.t.Fatalf("CreateRuns: %v", err)
	}
	return res[0]
}

func (f *fixture) claim(limit int, mod ...func(*store.Claim)) []store.ClaimedTask {
	f.t.Helper()
	p := store.Claim{Worker: "w1", Limit: limit, Now: f.now}
	for _, m := range mod {
		m(&p)
	}
	got, err := f.s.ClaimTasks(f.ctx, p)
	if err != nil {
		f.t.Fatalf("ClaimTasks: %v", err)
	}
	return got
}

// claimOne claims exactly one task and checks which.
func (f *fixture) claimOne(run uuid.UUID, step int) store.ClaimedTask {
	f.t.Helper()
	got := f.claim(1)
	if len(got) != 1 || got[0].Key != (store.TaskKey{Run: run, Step: step}) {
		f.t.Fatalf("claimed %v, want step %d of run %s", keys(got), step, run)
	}
	return got[0]
}

func (f *fixture) finish(r store.Results) store.FinishResult {
	f.t.Helper()
	r.Now = f.now
	res, err := f.s.Finish(f.ctx, r)
	if err != nil {
		f.t.Fatalf("Finish: %v", err)
	}
	return res
}

func (f *fixture) complete(c store.ClaimedTask, output string) store.FinishResult {
	f.t.Helper()
	return f.finish(store.Results{Completions: []store.Completion{{
		Attempt: attempt(c), Output: []byte(output), Children: diamondChildren[c.Key.Step],
	}}})
}

// cancelOne cancels one run through CancelRuns and reports whether it did.
func (f *fixture) cancelOne(id uuid.UUID, now time.Time) (bool, error) {
	got, err := f.s.CancelRuns(f.ctx, []uuid.UUID{id}, now)
	return len(got) == 1 && got[0].ID == id, err
}

// retryOne retries one run through RetryRuns and reports whether it did.
func (f *fixture) retryOne(id uuid.UUID, now time.Time, reset ...store.ResetTask) (bool, error) {
	got, err := f.s.RetryRuns(f.ctx, store.RetryRuns{Runs: []store.RetryRun{{Run: id, Reset: reset}}, Now: now})
	return len(got) == 1 && got[0] == id, err
}

func (f *fixture) run(id uuid.UUID) store.Run {
	f.t.Helper()
	r, err := f.s.GetRun(f.ctx, id)
	if err != nil {
		f.t.Fatalf("GetRun: %v", err)
	}
	return r
}

func (f *fixture) statuses(id uuid.UUID) []store.TaskStatus {
	f.t.Helper()
	tasks, err := f.s.ListTasks(f.ctx, id)
	if err != nil {
		f.t.Fatalf("ListTasks: %v", err)
	}
	out := make([]store.TaskStatus, len(tasks))
	for i, tk := range tasks {
		out[i] = tk.Status
	}
	return out
}

// events returns the run's events as "step:TYPE" strings.
func (f *fixture) events(id uuid.UUID) []string {
	f.t.Helper()
	evs, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		f.t.Fatalf("ListEvents: %v", err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s:%s", stepNames[e.StepIndex], e.Type)
	}
	return out
}

// task returns one task of a run.
func (f *fixture) task(id uuid.UUID, step int) store.Task {
	f.t.Helper()
	tasks, err := f.s.ListTasks(f.ctx, id)
	if err != nil {
		f.t.Fatalf("ListTasks: %v", err)
	}
	return tasks[step]
}

// trail returns the event types of one step.
func (f *fixture) trail(id uuid.UUID, step int) []store.EventType {
	f.t.Helper()
	evs, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		f.t.Fatalf("ListEvents: %v", err)
	}
	var out []store.EventType
	for _, e := range evs {
		if e.StepIndex == step {
			out = append(out, e.Type)
		}
	}
	return out
}

var stepNames = []string{"a", "b", "c", "d", "h"}

func attempt(c store.ClaimedTask) store.Attempt { return store.Attempt{Key: c.Key, Attempt: c.Attempt} }

func keys(cs []store.ClaimedTask) []store.TaskKey {
	out := make([]store.TaskKey, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}

func steps(cs []store.ClaimedTask) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Key.Step
	}
	slices.Sort(out)
	return out
}

// fire fires the timers due at now, up to limit, and returns how many
// fired.
func (f *fixture) fire(now time.Time, limit int) (int, error) {
	fired, err := f.s.FireTimers(f.ctx, now, limit)
	return len(fired), err
}
