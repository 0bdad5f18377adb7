package executor

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chainPlanner plans every task of a chain of code steps as a job that
// completes it, and remembers the order the steps ran in.
type chainPlanner struct {
	steps int
	mu    sync.Mutex
	ran   []int
}

func (p *chainPlanner) Versions() []string { return []string{"chain@1"} }

func (p *chainPlanner) StepName(_ string, step int) (string, bool) { return "", false }

func (p *chainPlanner) Plan(_ context.Context, tasks []store.ClaimedTask, _ time.Time) ([]Job, store.Results, error) {
	jobs := make([]Job, len(tasks))
	for i, t := range tasks {
		jobs[i] = chainJob{p: p, task: t}
	}
	return jobs, store.Results{}, nil
}

type chainJob struct {
	p    *chainPlanner
	task store.ClaimedTask
}

func (j chainJob) Task() store.ClaimedTask { return j.task }
func (j chainJob) FailureHandler() bool    { return false }

func (j chainJob) Run(_, stepCtx context.Context) (store.Results, bool) {
	if context.Cause(stepCtx) != nil {
		return store.Results{}, false
	}
	j.p.mu.Lock()
	j.p.ran = append(j.p.ran, j.task.Key.Step)
	j.p.mu.Unlock()
	var children []int
	if next := j.task.Key.Step + 1; next < j.p.steps {
		children = []int{next}
	}
	return store.Results{Now: time.Now(), Completions: []store.Completion{{Attempt: AttemptOf(j.task), Children: children}}}, true
}

// bundle is an executor on a memory store with one chain run queued.
type bundle struct {
	x       *Executor
	planner *chainPlanner
	store   store.Store
	run     uuid.UUID
	ended   chan uuid.UUID
}

func setup(t *testing.T, c clock.Clock, steps int) *bundle {
	t.Helper()
	s := memstore.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := &bundle{planner: &chainPlanner{steps: steps}, store: s, run: uuid.New(), ended: make(chan uuid.UUID, 10)}
	b.x = New(Config{
		Worker: "w1", Concurrency: 4, ClaimBatch: 4, BatchWindow: time.Millisecond,
		PollInterval: 10 * time.Millisecond, HeartbeatInterval: time.Second, Stopped: context.Canceled,
		Planner: b.planner, RunEnded: func(id uuid.UUID) { b.ended <- id }, TimerSet: func() {},
		Store: s, Clock: c, Log: log, Faults: telemetry.NewFaults(log),
	})
	tasks := make([]store.NewTask, steps)
	for i := range tasks {
		tasks[i] = store.NewTask{Step: i, Kind: store.KindCode, Plain: true, MaxAttempts: 1}
		if i > 0 {
			tasks[i].Parents, tasks[i].Pending = []int{i - 1}, 1
		}
	}
	_, err := s.CreateRuns(t.Context(), store.CreateRuns{Now: c.Now(), Runs: []store.NewRun{{
		ID: b.run, Workflow: "chain", Version: "chain@1", Tenant: "t", Input: []byte(`{}`), Tasks: tasks,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) status(t *testing.T) store.RunStatus {
	t.Helper()
	st, err := b.store.RunStatuses(t.Context(), []uuid.UUID{b.run})
	if err != nil {
		t.Fatal(err)
	}
	return st[b.run]
}

// A hand runs a chain to its end in one RunUntilIdle: each completion's
// child is handed off to it and run without a claim, in order.
func TestHandRunsAChainToItsEnd(t *testing.T) {
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	b := setup(t, vc, 3)
	none := func(context.Context) (int, error) { return 0, nil }
	claimed, err := b.x.NewHand().RunUntilIdle(t.Context(), Drive{
		FireTimers:    none,
		FireSchedules: func(context.Context) error { return nil },
		NextTick:      func() (time.Time, bool) { return time.Time{}, false },
	})
	if err != nil {
		t.Fatal(err)
	}
	if claimed != 1 {
		t.Errorf("claimed %d tasks, want 1 (the others handed off)", claimed)
	}
	if !slices.Equal(b.planner.ran, []int{0, 1, 2}) {
		t.Errorf("ran steps %v, want 0, 1, 2", b.planner.ran)
	}
	if st := b.status(t); st != store.RunCompleted {
		t.Errorf("run %s, want COMPLETED", st)
	}
	if got := <-b.ended; got != b.run {
		t.Errorf("RunEnded told of %s, want the run", got)
	}
	if owned := b.x.claims.owned(); len(owned) != 0 {
		t.Errorf("still owns %v after the run ended", owned)
	}
}

// A started executor claims and runs a chain on its own, and stops
// cleanly, owning nothing.
func TestStartedExecutorRunsAChain(t *testing.T) {
	b := setup(t, clock.Real(), 3)
	b.x.Start(t.Context(), time.Now())
	select {
	case got := <-b.ended:
		if got != b.run {
			t.Errorf("RunEnded told of %s, want the run", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end")
	}
	if err := b.x.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := b.status(t); st != store.RunCompleted || !slices.Equal(b.planner.ran, []int{0, 1, 2}) {
		t.Errorf("run %s after steps %v, want COMPLETED after 0, 1, 2", st, b.planner.ran)
	}
	if owned := b.x.claims.owned(); len(owned) != 0 {
		t.Errorf("still owns %v after Stop", owned)
	}
}
