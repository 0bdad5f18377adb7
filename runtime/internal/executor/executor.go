// Package executor owns the path of a task through an engine: claimed
// from the store (or handed off to this engine as its parent's result is
// recorded), run on one of the engine's slots, and its result recorded,
// in batches. It owns the slots, the claim loop, the recorders (flush
// loops), heartbeats and the reconciliation of what the store says this
// worker holds with what it runs (the claims table), hand-offs and the
// tasks waiting for a slot, handing tasks back, and the store refusing a
// result (refused data, stale attempts).
//
// What a task means is not its business: the engine plans each claimed
// batch (Planner.Plan: which tasks run code, which results are known at
// once) and each Job runs its step's code. A started engine runs the
// executor's loops (Start, Stop); a test's Driver drives the same
// pipeline by hand (Hand), so that tests exercise the production path.
package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Config configures an Executor. Its fields mirror runtime.Config's,
// whose defaults apply.
type Config struct {
	Worker            string
	Concurrency       int
	ClaimBatch        int
	BatchWindow       time.Duration
	PollInterval      time.Duration
	HeartbeatInterval time.Duration
	TenantConcurrency int
	DisableHandOff    bool
	// Labels are the engine's worker labels, "key=value", sorted: its
	// claims and hand-offs take only tasks whose labels they include.
	Labels []string
	// Stopped is the cause with which Stop cancels the steps still
	// running past its deadline (runtime.ErrStopped).
	Stopped error

	Planner Planner
	// RunEnded is told that a run may have ended, so that whoever waits
	// for it looks.
	RunEnded func(run uuid.UUID)
	// TimerSet is told that a recorded batch set a durable timer.
	TimerSet func()
	// EndCause, when set, says why a run whose steps this engine runs
	// ended elsewhere (ErrRunEnded, or more: its deadline passed), or nil
	// while the run is running. It is asked only for runs this engine
	// runs code of: when the run's end is announced, and when a heartbeat
	// finds such a task no longer held.
	EndCause func(ctx context.Context, run uuid.UUID) error

	Store   store.Store
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *telemetry.Metrics
	Faults  *telemetry.Faults
}

// Planner is the engine's side of the executor: what tasks mean.
type Planner interface {
	// Versions lists the workflow versions whose tasks this engine runs
	// (those it serves): it claims and is handed off only theirs.
	Versions() []string
	// Plan looks at tasks this engine now owns, claimed (or handed off)
	// at claimedAt, and sorts them into jobs whose code must run and
	// results known at once. An error hands the tasks back.
	Plan(ctx context.Context, tasks []store.ClaimedTask, claimedAt time.Time) ([]Job, store.Results, error)
	// StepName names step of a workflow version in log lines, when the
	// engine knows the version.
	StepName(version string, step int) (string, bool)
}

// Job is a claimed task whose step's code is to run.
type Job interface {
	// Task is the claimed task.
	Task() store.ClaimedTask
	// FailureHandler is true for a failure handler, which runs after its
	// run ended and must not be stopped by that.
	FailureHandler() bool
	// Run runs the step's code in stepCtx and turns what it returned
	// into a result; ctx outlives the step (for what it starts on the
	// step's behalf, such as a child run). ok is false when the result
	// must be dropped: stepCtx was cancelled with a cause (the run ended,
	// the task was lost, the engine stopped).
	Run(ctx, stepCtx context.Context) (res store.Results, ok bool)
}

// Causes with which a running step's context is cancelled when its result
// is no longer wanted; the result is then dropped, not recorded.
var (
	ErrRunEnded = errors.New("the run ended (it failed elsewhere or was cancelled)")
	errTaskLost = errors.New("this worker no longer owns the task")
)

// maxFlush bounds how many results go to the store in one Finish call.
const maxFlush = 512

// Executor claims, runs and records the tasks of one engine.
type Executor struct {
	cfg    Config
	claims claims
	wakeup chan struct{} // see Wake

	mu sync.Mutex
	lc *loops // set while started
}

// New returns an executor; it does nothing until Start, or a Hand
// drives it.
func New(cfg Config) *Executor {
	return &Executor{cfg: cfg, claims: newClaims(), wakeup: make(chan struct{}, 1)}
}

// Wake nudges the claim loop (if running) to look for work now.
func (x *Executor) Wake() {
	select {
	case x.wakeup <- struct{}{}:
	default:
	}
}

// StopRun cancels the running steps of a run that ended (but not its
// failure handler), and keeps its tasks waiting for a slot from
// starting. The steps' context's cause is ErrRunEnded, or what EndCause
// says.
func (x *Executor) StopRun(run uuid.UUID) { x.claims.stopRun(run, x.endCause(run)) }

// endCauseTimeout bounds how long StopRun asks why a run ended.
const endCauseTimeout = 5 * time.Second

// endCause is the cause StopRun cancels a run's steps with. It asks
// EndCause (a read of the run) only when some step's code is running to
// be stopped: every run that finishes anywhere is announced to every
// engine, and the engine that recorded its last step usually still owns
// that step, its result in flight, when the news comes back.
func (x *Executor) endCause(run uuid.UUID) error {
	if x.cfg.EndCause == nil || !x.claims.runsCode(run) {
		return ErrRunEnded
	}
	ctx, cancel := context.WithTimeout(context.Background(), endCauseTimeout)
	defer cancel()
	if cause := x.cfg.EndCause(ctx, run); cause != nil {
		return cause
	}
	return ErrRunEnded
}

// AttemptLog returns the log with the attributes of an owned attempt, as
// far as the executor knows them.
func (x *Executor) AttemptLog(a store.Attempt) *slog.Logger {
	cl, ok := x.claims.about(a)
	if !ok {
		return x.cfg.Log.With(telemetry.KeyRunID, a.Key.Run.String(), telemetry.KeyStep, fmt.Sprintf("step %d", a.Key.Step))
	}
	at := telemetry.Attempt{Run: a.Key.Run, Workflow: cl.workflow, Tenant: cl.tenant, Step: fmt.Sprintf("step %d", a.Key.Step), Attempt: a.Attempt}
	if name, ok := x.cfg.Planner.StepName(cl.version, a.Key.Step); ok {
		at.Step = name
	}
	return at.Logger(x.cfg.Log)
}

// handBack gives tasks this engine will not go on with back to the queue:
// it forgets their attempts, then releases them in the store; count says
// whether the attempts count against the steps' retries (their code ran).
// When the store cannot be reached, the next reconciliations (see
// claims.reconcile) find the tasks leased but not owned and release them
// then, without counting.
func (x *Executor) handBack(ctx context.Context, tasks []store.Attempt, reason string, count bool) {
	if len(tasks) == 0 {
		return
	}
	x.claims.release(tasks...)
	res, err := x.cfg.Store.ReleaseTasks(ctx, store.Release{
		Worker: x.cfg.Worker, Attempts: tasks, Reason: reason, Count: count, Now: x.cfg.Clock.Now(),
	})
	if err != nil {
		x.cfg.Log.Warn("handing tasks back failed; reconciliation will retry", "tasks", len(tasks), "reason", reason, "error", err)
		return
	}
	if n := len(res.Requeued) + len(res.Failed); n > 0 {
		x.cfg.Log.Info("handed tasks back", "requeued", len(res.Requeued), "failed", len(res.Failed), "reason", reason)
		x.Wake()
	}
}

// execute runs a job on behalf of the pipeline: its code runs in a
// context of its own that the claims can cancel (its run ended, its task
// was lost). A dropped result forgets the task, unless the engine is
// stopping: the task then stays owned, for Stop to hand back.
func (x *Executor) execute(ctx context.Context, j Job) (store.Results, bool) {
	t := j.Task()
	stepCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	x.claims.started(t, j.FailureHandler(), cancel)
	defer x.claims.ended(t)
	res, ok := j.Run(ctx, stepCtx)
	if !ok {
		if !errors.Is(context.Cause(stepCtx), x.cfg.Stopped) {
			x.claims.release(AttemptOf(t))
		}
		return store.Results{}, false
	}
	return res, true
}

// AttemptOf is the attempt a claimed task is.
func AttemptOf(c store.ClaimedTask) store.Attempt {
	return store.Attempt{Key: c.Key, Attempt: c.Attempt}
}

func attemptsOf(tasks []store.ClaimedTask) []store.Attempt {
	out := make([]store.Attempt, len(tasks))
	for i, t := range tasks {
		out[i] = AttemptOf(t)
	}
	return out
}

// CleanText makes an error text storable: valid UTF-8 without NUL bytes.
func CleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// Merge appends the results of b to a.
func Merge(a *store.Results, b store.Results) {
	a.Completions = append(a.Completions, b.Completions...)
	a.Retries = append(a.Retries, b.Retries...)
	a.Failures = append(a.Failures, b.Failures...)
	a.Sleeps = append(a.Sleeps, b.Sleeps...)
	a.Spawns = append(a.Spawns, b.Spawns...)
	a.Awaits = append(a.Awaits, b.Awaits...)
	if b.Now.After(a.Now) {
		a.Now = b.Now
	}
}
