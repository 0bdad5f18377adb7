// Package store is the port between the engine and its storage. The engine
// owns the workflow logic (which step runs next, what a skip or a failure
// means); a store owns the state and makes each operation below atomic.
// Two adapters implement it: memstore (tests, single process) and pgstore
// (PostgreSQL, many processes). Both pass the same conformance suite,
// storetest.
//
// Operations take batches wherever the engine can gather work (claims,
// results), so that an adapter can do many tasks in one round trip. Every
// operation takes the current time from its caller: a store never reads a
// clock, which is what lets tests drive time.
//
// A task is addressed by its run and its step index (TaskKey). Stores keep
// no workflow graph: the engine passes the few facts a store needs (how
// many parents a task waits for, which children a completion resolves).
//
// # No task is stranded
//
// A task is RUNNING only while a worker holds it under a lease, from its
// claim until its result is recorded, and the engine keeps this invariant:
// a RUNNING task is held by a live attempt in its worker's memory, or it
// is recovered. Each path that can lose an attempt gives it back:
//
//   - a worker that dies stops heartbeating, and the leader's RecoverTasks
//     requeues its tasks (or fails those out of attempts);
//   - a live worker that cannot go on with a task it claimed (the claim's
//     answer was lost with its connection, recording its start failed, it
//     is stopping with results unrecorded) hands it back with ReleaseTasks;
//   - and every worker reconciles: Heartbeat returns the leases the store
//     says it holds, and the worker releases those it holds no attempt
//     for, whatever lost them.
//
// # Time
//
// Event times never go backwards for a task: a store stamps each change
// of a task at the later of the time it is given and the task's previous
// change, so that QUEUED <= STARTED <= the terminal event even when the
// engines sharing a store read clocks that disagree, or read them before
// waiting for a connection. A child is queued no earlier than the parent
// that resolved it.
//
// # Errors
//
// An adapter's errors name the adapter and the operation ("pgstore:
// claiming tasks: ..."); the engine adds no operation of its own on top.
// Adapters mark passing faults (a lost connection, a database restart, a
// serialization failure or deadlock) with ErrTransient: the engine retries
// those. An operation that fails that way may or may not have taken
// effect; every operation is safe to retry or to reconcile afterwards.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Sentinel errors shared by all adapters.
var (
	// ErrNotFound: the run (or workflow version) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrTxUnsupported: the caller passed a transaction this store cannot use.
	ErrTxUnsupported = errors.New("store does not support caller transactions")
	// ErrInvalidData: the store refused the data itself (not a passing
	// fault), so retrying the same operation cannot succeed.
	ErrInvalidData = errors.New("store refused the data")
	// ErrTransient: a passing fault, such as a lost connection or a
	// database restart; the same operation may succeed when retried.
	ErrTransient = errors.New("transient store failure")
)

// Store is the whole port. Each embedded interface is one concern.
type Store interface {
	Workflows
	Runs
	Tasks
	Timers
	Coordination
	Ops
	Retention
	Schedules
	Events
	Pauses
}

// TaskKey identifies a task: the run and the step's index in the workflow.
type TaskKey struct {
	Run  uuid.UUID
	Step int
}

// Workflows stores workflow definitions by version, so that any process can
// interpret any run, including runs of versions it was not built with.
type Workflows interface {
	// SaveWorkflow stores a version; saving an existing version is a no-op.
	SaveWorkflow(ctx context.Context, w WorkflowVersion) error
	// LoadWorkflow returns a stored version, or ErrNotFound.
	LoadWorkflow(ctx context.Context, version string) (WorkflowVersion, error)
	// WorkflowVersions returns the stored versions of the named workflows,
	// by name then version, without their Spec: an engine reads them to
	// find the versions its code can run besides those it registered.
	WorkflowVersions(ctx context.Context, names []string) ([]WorkflowVersion, error)
}

// WorkflowVersion is one stored definition.
type WorkflowVersion struct {
	Version string // unique, e.g. "order-processing@1a2b3c4d5e6f7a8b"
	Name    string
	Spec    []byte // the JSON of runtime.WorkflowSpec
	// SavedAt is when the version was first saved, by the saving caller's
	// clock. Postgres stamps a version saved with a zero SavedAt (as
	// engines did before this field) with the database's time; the memory
	// store keeps it zero.
	SavedAt time.Time
}

// Runs creates, reads and changes runs as a whole.
type Runs interface {
	// CreateRuns atomically creates runs and all their tasks, queues the
	// tasks that wait for no parent (writing their QUEUED events) and
	// signals TasksReady. For a run whose idempotency key an earlier run of
	// the same workflow and tenant used, it writes nothing and returns that
	// run with Created false; calls racing with keys in common all
	// succeed, and each key ends with one run. A run whose id exists is
	// left as it is and reported created: ids are made by the caller, so
	// that a CreateRuns retried after a transient failure, which may have
	// taken effect, does not create runs twice. It returns one result per
	// run, in order, and queues roots in that order. With Tx set,
	// everything happens inside the caller's transaction; a store that
	// cannot use Tx returns ErrTxUnsupported.
	CreateRuns(ctx context.Context, p CreateRuns) ([]CreateRunResult, error)
	// GetRun returns a run, or ErrNotFound.
	GetRun(ctx context.Context, id uuid.UUID) (Run, error)
	// RunStatuses returns the status of each run of ids that exists; an
	// unknown id has no entry. It reads nothing else, so that a caller
	// waiting for many runs can poll them cheaply.
	RunStatuses(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]RunStatus, error)
	// GetRuns returns the runs of ids that exist, ordered by id, each with
	// its tasks in step order: what GetRun and ListTasks return, for many
	// runs in one read, as of one instant. An unknown id is left out.
	GetRuns(ctx context.Context, ids []uuid.UUID) ([]RunWithTasks, error)
	// ListTasks returns every task of a run in step order.
	ListTasks(ctx context.Context, run uuid.UUID) ([]Task, error)
	// ListEvents returns a run's event log in the order it was written.
	ListEvents(ctx context.Context, run uuid.UUID) ([]Event, error)
	// CancelRuns atomically moves each RUNNING run of ids to CANCELLED and
	// every task of it that has not finished to CANCELLED (with events),
	// removing their queue entries and timers, and signals RunFinished for
	// each. It returns the runs it cancelled, in id order; runs that had
	// already ended and unknown ids are left as they are and out of the
	// result.
	CancelRuns(ctx context.Context, ids []uuid.UUID, now time.Time) ([]CancelledRun, error)
	// ChildRuns returns the runs started by a task (see Spawn), with their
	// tasks, ordered by Parent.Index and then by creation: a retried
	// parent may have started several runs for one index, the last of
	// which counts.
	ChildRuns(ctx context.Context, parent TaskKey) ([]RunWithTasks, error)
	// RetryRuns atomically moves each FAILED or CANCELLED run of p back to
	// RUNNING, and each COMPLETED one given with From (a rerun): each task
	// in its Reset returns to PENDING waiting for Pending parents, or is
	// queued when Pending is 0 (with a QUEUED event saying "run retried",
	// or "rerun from <From>"); its output is dropped and its retry budget
	// restarts (attempt numbers keep growing). Tasks outside Reset keep
	// their status and output. It returns the runs it reopened, in id
	// order; runs in any other status and unknown ids are left as they are
	// and out of the result.
	RetryRuns(ctx context.Context, p RetryRuns) ([]uuid.UUID, error)
}

// # Child runs
//
// A task can start runs of its own (Spawn): map elements and child
// workflows. It then waits, WAITING, holding nothing, until they end: a
// child run that ends COMPLETED counts its parent task's wait down, and
// the task is queued again (woken, with a WOKEN event) when the last one
// completes, or at once when one ends otherwise. A run that ends FAILED
// or CANCELLED cancels its RUNNING child runs, and theirs, in the same
// transaction. Each store applies these rules wherever a run ends.

// # Events
//
// A wait task (KindWait) waits for an event (Await): it completes with the
// payload of the first event of its name sent to its run, or, for a wait
// with a key, sent with that key to its workflow and tenant, at or after
// its run was created; an event sent before the wait began is kept and
// delivered when it begins. Each event reaches every wait it is the first
// event for. The store keeps the payload as the task's output and queues
// the task woken, to be completed; a wait whose deadline passes first is
// woken with no output.

// Events delivers the events wait tasks wait for.
type Events interface {
	// SendEvents stores events and, atomically with that, wakes every wait
	// task each one is the first event for (see Events above). An event
	// addressed to a run of another workflow, or to no run, is refused
	// with ErrNotFound, and nothing of the batch is stored. With Tx set,
	// everything happens inside the caller's transaction; a store that
	// cannot use Tx returns ErrTxUnsupported.
	SendEvents(ctx context.Context, p SendEvents) ([]SentEvent, error)
}

// SendEvents holds what SendEvents needs.
type SendEvents struct {
	Events []NewEvent
	Now    time.Time
	Tx     Tx
}

// NewEvent is one event to send.
type NewEvent struct {
	// Workflow is the name of the workflow whose waits the event is for.
	Workflow string
	// Name is the event's name, as wait steps declare it.
	Name string
	// Run, when set, addresses the event to one run of Workflow: its waits
	// for Name receive it, keyed or not. Tenant and Key are then unused.
	Run uuid.UUID
	// Tenant and Key address an event not sent to a run: the waits for
	// Name whose key is Key, in runs of Workflow and Tenant, receive it.
	Tenant string
	Key    string
	// ID, when set on an event sent with a key, names the event (a
	// published event's id): an event whose ID the store already holds
	// for the same Workflow, Tenant and Name is a repeat, of which
	// SendEvents stores nothing and which wakes nothing. The store holds
	// an ID as long as it keeps the event (Retention.PurgeEvents). An
	// event sent to a run takes no ID.
	ID string
	// Payload is the event's JSON payload, already validated.
	Payload []byte
}

// SentEvent reports what SendEvents did with one event.
type SentEvent struct {
	// Woken is how many waiting tasks the event woke.
	Woken int
	// Repeat reports an event whose ID the store held already: it was
	// dropped.
	Repeat bool
}

// Tasks moves tasks through their lives. Every result is guarded: it
// applies only to a task that is still RUNNING in the attempt the caller
// claimed; results for tasks that were cancelled or recovered meanwhile
// are dropped and reported as stale.
type Tasks interface {
	// ClaimTasks atomically takes up to Limit tasks from the ready queue in
	// fair order: round robin over tenants, one task per tenant in turn,
	// where a tenant that was idle joins the current round rather than
	// queueing behind another tenant's backlog (Hatchet's block-based
	// queue ids; each adapter implements it). It marks them RUNNING under a
	// lease for the worker, and counts a new attempt (not for a
	// woken sleep task, which has no attempts). Plain tasks get their
	// STARTED event here. Each claimed task comes with its run's facts and
	// its parents' statuses and outputs, so that the worker needs no other
	// read. No task is ever claimed by two callers.
	ClaimTasks(ctx context.Context, p Claim) ([]ClaimedTask, error)
	// StartTasks writes STARTED events for claimed tasks that turned out to
	// run their code (those that were not plain).
	StartTasks(ctx context.Context, tasks []Attempt, now time.Time) error
	// Finish applies a batch of results atomically. For each completion:
	// the task becomes COMPLETED or SKIPPED, its children's pending counts
	// drop by one and children reaching zero are queued (exactly once,
	// however completions interleave), and a run whose every task is
	// resolved becomes COMPLETED. For each retry: the task waits in RETRYING
	// on a durable timer. For each failure: the task becomes FAILED; if its
	// run is RUNNING, the run becomes FAILED with the failure recorded,
	// every unfinished task is CANCELLED, and the failure handler task (if
	// any) is queued, exactly once per failure of the run. For each sleep:
	// the task waits in SLEEPING on a durable timer. Events are written for
	// every change, and TasksReady/RunFinished are signalled. With
	// HandOff set, children ready to run may go to the recording worker
	// instead of the queue (see HandOff).
	Finish(ctx context.Context, r Results) (FinishResult, error)
	// Heartbeat records that the worker is alive, which keeps every task it
	// holds from being recovered, and returns the leases it holds: the
	// worker compares them with the attempts it runs, stopping code whose
	// task it no longer holds and releasing tasks it holds no attempt for.
	// It touches no task, so it never waits on task results being
	// recorded.
	Heartbeat(ctx context.Context, worker string, now time.Time) ([]Lease, error)
	// AnnounceWorker records the workflow versions a worker registered
	// (each a definition's version, name@hash) and its labels (see
	// Claim.Labels), replacing what it announced before, and heartbeats
	// for it at now. A worker announces itself when it starts;
	// ListWorkers reports what it said, and Unserved reads the labels of
	// the live workers.
	AnnounceWorker(ctx context.Context, worker string, versions, labels []string, now time.Time) error
	// ReleaseTasks hands tasks the worker holds back, atomically for each:
	// a task still RUNNING in the given attempt under that worker is queued
	// again (a woken sleep task to be completed), with a QUEUED event whose
	// detail is Reason. Unless Count is set, the attempt does not count
	// against the task's retry budget; with Count the task is treated as
	// RecoverTasks treats a dead worker's (RETRYING then QUEUED, or failed
	// when out of attempts). Tasks already finished, cancelled or recovered
	// are left alone.
	ReleaseTasks(ctx context.Context, p Release) (RecoverResult, error)
	// StuckTasks lists up to Limit tasks that have made no progress since
	// Before, oldest first: RUNNING tasks claimed before it, QUEUED tasks
	// queued before it, and SLEEPING or RETRYING tasks whose timer was due
	// before it and has not fired. It reads only live work, so it stays
	// cheap however much history the store keeps.
	StuckTasks(ctx context.Context, p Stuck) ([]StuckTask, error)
	// QueueDepth counts the live work: the tasks queued (waiting to be
	// claimed, woken sleeps included) and running, in total and for the
	// tenants tenants with the most queued tasks (then the most running,
	// then by name). Like StuckTasks it reads only live work; its cost
	// grows with the tasks queued and running, not with history.
	QueueDepth(ctx context.Context, tenants int) (QueueDepth, error)
	// RecoverTasks finds up to Limit RUNNING tasks claimed before
	// StaleBefore whose worker has not heartbeated since StaleBefore (it
	// died) and, atomically for each, queues it again when it has attempts
	// left or fails it like Finish does.
	RecoverTasks(ctx context.Context, p Recover) (RecoverResult, error)
}

// Timers fires durable timers.
type Timers interface {
	// FireTimers atomically takes up to Limit timers due at Now and acts on
	// their tasks: a retrying task is queued for its next attempt (QUEUED
	// event); a sleep step (KindSleep) that slept completes (WOKEN, then
	// COMPLETED), its children resolved and its run completed as Finish
	// would, with no worker claiming it; any other sleeping task is queued
	// to be completed (WOKEN event). A timer fires once. It returns the
	// timers it fired, in no particular order, each with the time it was
	// due, so that the caller can tell how late they fired.
	FireTimers(ctx context.Context, now time.Time, limit int) ([]FiredTimer, error)
	// FireRunTimers takes up to Limit run timers due at Now and acts on
	// their runs, if still RUNNING. A delayed run's start (NewRun.StartAt)
	// queues its roots as CreateRuns queues those of a run started at
	// once (QUEUED events with detail "run started"), under their limits,
	// and sets its deadline, Timeout from Now. A deadline (NewRun.Timeout)
	// fails the run as a step's permanent failure would: the run becomes
	// FAILED with a Failure whose StepIndex is -1 and whose Error is
	// DeadlineError of its timeout, every unfinished task of it is
	// CANCELLED (detail DeadlineDetail), its child runs are cancelled and
	// its failure handler is queued; RunFinished is signalled. A timer
	// fires once; a run that ended first is left as it is, and so is a
	// delayed run whose roots were queued already (it was cancelled
	// before its start, then retried). It returns the timers that acted
	// on their runs.
	FireRunTimers(ctx context.Context, now time.Time, limit int) ([]FiredRunTimer, error)
	// NextTimer returns when the earliest pending timer or run deadline
	// is due, or false when there is none.
	NextTimer(ctx context.Context) (time.Time, bool, error)
}

// Coordination is what several engines sharing a store need.
type Coordination interface {
	// Leadership returns the elector for singleton duties (firing timers,
	// recovering tasks). At most one elector holds leadership at a time.
	Leadership(worker string) Elector
	// Listen delivers notifications until ctx ends. Delivery is best
	// effort: a slow reader may miss some, so engines also poll.
	Listen(ctx context.Context) (<-chan Notification, error)
	// Maintain does the store's periodic housekeeping; the leader calls it
	// every few seconds, with its clock's time.
	Maintain(ctx context.Context, now time.Time) error
}

// Elector holds or seeks leadership.
type Elector interface {
	// TryLead acquires leadership if it is free, and reports whether the
	// caller holds it (it may already have).
	TryLead(ctx context.Context) (bool, error)
	// Resign gives leadership up.
	Resign(ctx context.Context) error
}

// NotificationKind says what a Notification is about.
type NotificationKind int8

// Notification kinds.
const (
	// TasksReady: tasks were queued.
	TasksReady NotificationKind = iota + 1
	// RunFinished: a run reached a terminal status (or was cancelled); its
	// running tasks should stop.
	RunFinished
	// TimerSet: a claim set a durable timer (it put a task off by its rate
	// limit); the leader should look at its next timer again.
	TimerSet
)

// Notification is a wake-up sent by a store.
type Notification struct {
	Kind NotificationKind
	Run  uuid.UUID // for RunFinished
}

// CreateRuns holds what CreateRuns needs.
type CreateRuns struct {
	Runs []NewRun
	Now  time.Time
	Tx   Tx
}

// Tx is a caller's transaction that a store can create runs in. Each store
// that supports them has a Tx type of its own (pgstore.Tx wraps a pgx.Tx),
// so that passing anything else where a transaction is expected does not
// compile.
type Tx interface {
	// StoreTx marks a store's transaction type; it does nothing.
	StoreTx()
}

// NewRun is one run to create. Its id is new; keys of runs in one batch
// are distinct.
type NewRun struct {
	ID             uuid.UUID
	Workflow       string
	Version        string
	Tenant         string
	IdempotencyKey string
	// Priority is the run's priority, spec.PriorityLow to
	// spec.PriorityHigh, or zero for spec.PriorityNormal: its tasks go to
	// its lanes of the ready queue (see Lane).
	Priority int
	Input    []byte
	// TraceContext is the trace context of the code that triggered the
	// run, so that the run's steps continue its trace; empty for none. The
	// engine writes it and reads it back (as W3C Trace Context headers);
	// to a store it is opaque text.
	TraceContext string
	// Parent is the task that started the run (see Spawn); nil for a run
	// started otherwise. A store reads its ID, StepIndex and Index.
	Parent *ParentRun
	// Tags are the run's tags (checked by the engine; nil for none). A
	// run a Spawn creates carries its parent run's tags too, its own
	// taking the place of the parent's where a key is in both: the store
	// merges them, so that the engine needs no read of the parent's.
	Tags map[string]string
	// StartAt, when after CreateRuns.Now, delays the run: it is created
	// RUNNING, but its roots wait, PENDING, until a durable timer starts
	// it at StartAt (see FireRunTimers).
	StartAt time.Time
	// Timeout, when positive, gives the run a deadline: Timeout after it
	// starts (CreateRuns.Now, or when it starts if delayed), the run, if
	// still RUNNING, fails (see FireRunTimers). The store keeps the
	// deadline as a durable timer.
	Timeout time.Duration
	// RunLimit, when its Key is set, bounds the runs in progress that
	// share its key (see RunLimit).
	RunLimit RunLimit
	// Debounce, when its Key is set, puts the run off until no newer run
	// of its key is created within its window (see Debounce). A run has a
	// RunLimit or a Debounce, not both.
	Debounce Debounce
	Tasks    []NewTask // one per step, in step order
}

// ParentRun names the run whose step started a run (an item of a map
// step, the run of a child workflow step), and the run's place among the
// runs that step started. Its JSON is what trellis runs list and show
// print of a run's parent.
type ParentRun struct {
	ID uuid.UUID `json:"id"`
	// StepIndex is the index of the parent's step that started the run,
	// which a store keeps; Step is that step's name, which the engine
	// fills in where it reads the parent's workflow version anyway (ops'
	// run detail), and is empty elsewhere.
	StepIndex int    `json:"-"`
	Step      string `json:"step,omitempty"`
	// Index is the item's position in the list, for an item of a map
	// step; the attempt that started it, for a child workflow's run.
	Index int `json:"index"`
}

// Task is the parent's task that started the run.
func (p *ParentRun) Task() TaskKey { return TaskKey{Run: p.ID, Step: p.StepIndex} }

// NewTask is one task of a new run.
type NewTask struct {
	Step        int
	Kind        Kind
	Parents     []int // step indexes of its parents
	Pending     int   // parents to wait for; 0 queues it (except for the failure handler)
	Plain       bool  // a code step that can never be skipped: a claim may record it STARTED at once
	MaxAttempts int
	// Limit, when its Key is set, bounds the tasks in progress that share
	// its key (see Limit).
	Limit Limit
	// Rate, when its Key is set, paces the starts of the tasks that share
	// its key (see Rate).
	Rate Rate
	// Labels are the worker labels the task needs (a step's runsOn), in
	// their stored form: "key=value", sorted (spec.LabelList). Only a
	// worker whose Claim.Labels include every one claims the task, on
	// whatever path it is queued (see Claim.Labels). Empty for none.
	Labels []string
}

// Rate is a rate limit on task starts (a claim that runs the task's code:
// first attempts, retries, and attempts after a worker died), by the
// generic cell rate algorithm. Each start takes a turn of its Key: turns
// are at least Interval apart, except that up to Burst may fall at once
// after a quiet spell, and they are given in the order tasks are claimed.
// A claim that gives a task a turn later than its Now does not return the
// task: it leaves it QUEUED, off the ready queue, with a timer for its
// turn (a TimerSet notification tells the leader), when FireTimers
// queues it again, and its next claim starts it. So no task starts
// before its turn; one that reaches its turn late starts when it can.
// Claims compute with their Now, or the task's last change when that is
// later; Interval is a whole number of microseconds.
type Rate struct {
	Key      string
	Interval time.Duration
	Burst    int
}

// Limit is a concurrency limit on tasks: at most Max tasks with the same
// Key are in progress at once, across every worker. A task takes a slot
// of its key when it is first queued and gives it back when it ends
// (COMPLETED, SKIPPED, FAILED or CANCELLED); it keeps it while it runs,
// waits to retry, or is queued again after its worker died. A task that
// finds its key's slots all taken waits, QUEUED but not claimable, in
// its key's line, and is queued in the order it came as slots are given
// back. A key's slots exist only while some task holds or awaits one.
type Limit struct {
	Key string
	Max int
}

// RunLimit is a concurrency limit on whole runs: at most Max runs with
// the same Key are in progress at once, across every worker. A run takes
// a slot of its key when it is created and gives it back when it ends
// (COMPLETED, FAILED or CANCELLED); a run a retry reopens takes one
// again, even when its key has none free. When a new run finds its key's
// slots all taken, Strategy decides:
//
//   - "queue" (or empty): the run is created and waits, its roots QUEUED
//     but not claimable, in its key's line (Run.Waiting); runs are let
//     in, oldest first, as slots are given back. A run that ends while it
//     waits leaves the line.
//   - "cancelInProgress": the oldest runs holding the key's slots are
//     cancelled, with their unfinished tasks (the CANCELLED events'
//     detail names the new run), and the new run takes a slot.
//   - "cancelNewest": the new run is created and cancelled at once (its
//     tasks' CANCELLED events say why); it never holds a slot.
//
// Keys share nothing with Limit's keys: a store keeps both, and the
// engine gives run keys a scope no task key has.
type RunLimit struct {
	Key      string
	Max      int
	Strategy string
}

// Debounce lets only the last of a burst of runs with the same Key
// start. A new run waits, its roots QUEUED but not claimable
// (Run.DebouncedUntil), until Window after its creation; creating it
// cancels the runs of its key still waiting (their tasks' CANCELLED
// events name it). With MaxWait set, it waits at most until MaxWait after
// the creation of the first run of the burst (the oldest of the runs it
// cancels, or of theirs). When the time comes, FireTimers queues its
// roots; NextTimer counts it among the timers, and creating it signals
// TimerSet. A run that ends while it waits stops waiting. Keys share
// nothing with RunLimit's.
type Debounce struct {
	Key     string
	Window  time.Duration
	MaxWait time.Duration
}

// The strategies of a RunLimit.
const (
	RunLimitQueue            = "queue"
	RunLimitCancelInProgress = "cancelInProgress"
	RunLimitCancelNewest     = "cancelNewest"
)

// CreateRunResult reports the run CreateRuns created or found.
type CreateRunResult struct {
	ID      uuid.UUID
	Created bool
}

// Run is a stored run: the one run row, from the store to the user. The
// engine and ops name it (ops.Run) and fill in the names a store does not
// keep (Failure.Step, Parent.Step); its JSON is what trellis runs list
// prints of a run. Input and TraceContext are not printed.
type Run struct {
	ID             uuid.UUID `json:"id"`
	Workflow       string    `json:"workflow"`
	Version        string    `json:"version"`
	Tenant         string    `json:"tenant"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	// Priority is the run's priority: 1 (low), 2 (normal) or 3 (high).
	Priority int       `json:"priority"`
	Status   RunStatus `json:"status"`
	Input    []byte    `json:"-"`
	// TraceContext is NewRun.TraceContext: empty for a run triggered
	// without one.
	TraceContext string    `json:"-"`
	CreatedAt    time.Time `json:"createdAt"`
	// FinishedAt is when the run completed, failed or was cancelled; zero
	// while it runs (a retried run runs again).
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// Failure is the step that failed a FAILED run, and its error; nil
	// otherwise.
	Failure *RunFailure `json:"failure,omitempty"`
	// Parent is NewRun.Parent: the run whose step started this one, if
	// any.
	Parent *ParentRun `json:"parent,omitempty"`
	// RerunAt is when the run was last rerun from a step (RetryRuns with
	// From); zero for a run never rerun. Its result may differ from one
	// read before then: the event log says which steps ran again.
	RerunAt time.Time `json:"rerunAt,omitzero"`
	// Tags are the run's tags (see NewRun.Tags); nil for none. A store
	// never changes them once the run is created.
	Tags map[string]string `json:"tags,omitempty"`
	// StartAt is when a delayed run starts, or started (see
	// NewRun.StartAt); zero for a run started when it was triggered.
	StartAt time.Time `json:"startAt,omitzero"`
	// Deadline is when the run fails if it is still running (see
	// NewRun.Timeout); zero for a run without one, and for a delayed run
	// until it starts.
	Deadline time.Time `json:"deadline,omitzero"`
	// Waiting is true while a RUNNING run waits in its RunLimit key's
	// line for a slot: none of its tasks can be claimed yet.
	Waiting bool `json:"waiting,omitempty"`
	// DebouncedUntil is, while a RUNNING run waits for its Debounce
	// window, when it starts unless a newer run of its key cancels it;
	// zero otherwise.
	DebouncedUntil time.Time `json:"debouncedUntil,omitzero"`
}

// Scheduled reports whether the run waits for its delayed start at now:
// it runs, and its start is later. (The leader starts it when due, by
// its timer interval.)
func (r *Run) Scheduled(now time.Time) bool {
	return r.Status == RunRunning && r.StartAt.After(now)
}

// Duration is how long the run took, from creation (or, for a delayed
// run, its start) to its end; false while it runs.
func (r *Run) Duration() (time.Duration, bool) {
	if r.FinishedAt.IsZero() {
		return 0, false
	}
	from := r.CreatedAt
	if !r.StartAt.IsZero() && r.StartAt.Before(r.FinishedAt) {
		from = r.StartAt
	}
	return r.FinishedAt.Sub(from), true
}

// RunFailure is the permanent failure of a step that failed a run, or
// the run's deadline passing. A store keeps the step's index; the engine
// names the step.
type RunFailure struct {
	// StepIndex is the failed step's index in its workflow version, or -1
	// when no step failed the run: its deadline passed.
	StepIndex int `json:"-"`
	// Step is the name of the step that failed; empty when no step did.
	Step string `json:"step,omitempty"`
	// Error is the error its last attempt returned.
	Error string `json:"error"`
}

// RunWithTasks is a run with its tasks, in step order.
type RunWithTasks struct {
	Run
	Tasks []Task
}

// Task is a stored task.
type Task struct {
	Key        TaskKey
	Kind       Kind
	Status     TaskStatus
	Attempt    int
	Output     []byte
	Error      string
	Worker     string
	WakeAt     time.Time // for SLEEPING and RETRYING tasks
	UpdatedAt  time.Time
	FinishedAt time.Time
}

// Event is one entry of a run's event log, the one event type from the
// store to the user: runtime.Event is this type, and its JSON is what
// trellis runs events -format json prints. A store fills in every field
// but Step, the step's name, which it does not know (it keeps no workflow
// graph); the engine names the step from the run's workflow version
// (runtime.Engine.Events). ID, Run and StepIndex address the entry and
// are not shown.
type Event struct {
	ID  int64     `json:"-"`
	Run uuid.UUID `json:"-"`
	// StepIndex is the step's index in the run's workflow version.
	StepIndex int `json:"-"`
	// Step is the step's name ("step N" when the version has no step N);
	// empty as a store returns it.
	Step    string    `json:"step"`
	Type    EventType `json:"type"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	// Detail is for people: the error of a failure or retry, the reason
	// of a skip or a hand-back, the end of a sleep ("until ..."), or
	// empty. Programs read WakeAt rather than parse it.
	Detail string `json:"detail,omitempty"`
	// WakeAt is when a waiting task's timer is due: for a SLEEPING event,
	// when the sleep ends; for a RETRYING event, when the next attempt is
	// queued (after a retry backoff; a retry after a lost worker is queued
	// at once, at At). It is zero for every other event type. The task
	// may start later than WakeAt, when workers are busy, but never
	// earlier.
	WakeAt time.Time `json:"wakeAt,omitzero"`
}

// Claim holds what ClaimTasks needs.
type Claim struct {
	Worker string
	// Versions restricts claims to runs of these workflow versions
	// (name@hash, as Run.Version): the ones the worker serves, whose code
	// it has. Empty claims tasks of every version.
	Versions []string
	Limit    int
	// TenantLimit, when positive, caps how many tasks of one tenant may be
	// RUNNING at once, across all workers.
	TenantLimit int
	// Labels are the worker's labels, "key=value" (spec.LabelList). A
	// task that needs labels (NewTask.Labels) is claimed only by a worker
	// whose Labels include them all; the others pass it over, and claim
	// the tasks behind it in the queue's order as if it were not there.
	Labels []string
	Now    time.Time
}

// ClaimedTask is a task a worker now owns.
type ClaimedTask struct {
	Key  TaskKey
	Kind Kind
	// Attempt numbers the claim; it only grows, also across run retries,
	// so that it identifies this attempt in results.
	Attempt int
	// PriorAttempts is the number of attempts that do not count against
	// the retry budget: those made before the run was last retried, and
	// those handed back uncounted (see ReleaseTasks). Attempt -
	// PriorAttempts counts attempts in the current try.
	PriorAttempts int
	// Woken is true for a sleep task whose timer fired: it only needs to be
	// completed.
	Woken bool
	// Plain is true when the claim already wrote the STARTED event.
	Plain bool
	// Refused, when set, says why the store could not claim the task as
	// it claims others: the task's own data made its claim fail (a rate
	// limit key too long for an index, say), which would hold up every
	// claim behind it. The store took the task all the same, bare (no
	// rate limit turn, no STARTED event), so that the engine fails it
	// with this reason, without retries: the task is quarantined, and its
	// run fails with the reason recorded. A store that cannot fail that
	// way never sets it.
	Refused string
	// QueuedAt is when the task was queued for this claim (the time of its
	// last QUEUED or WOKEN event): the claim's time less QueuedAt is how
	// long it waited.
	QueuedAt time.Time
	// The run's facts, so that the worker needs no second read.
	Workflow   string
	Version    string
	Tenant     string
	Input      []byte
	FailedStep int    // for the failure handler: the step that failed
	Error      string // ... and its error
	// TraceContext is the run's (see NewRun).
	TraceContext string
	// Parents are the task's parents' statuses and outputs, in step order.
	Parents []ParentOutput
}

// ParentOutput is the status and output of a claimed task's parent.
type ParentOutput struct {
	Step   int
	Status TaskStatus
	Output []byte
}

// Attempt names one attempt of a task.
type Attempt struct {
	Key     TaskKey
	Attempt int
}

// Lease is a task a worker holds, as the store sees it.
type Lease struct {
	Attempt
	// ClaimedAt is when the claim took the task (the time it was stamped
	// with; see Time in the package documentation).
	ClaimedAt time.Time
}

// Release holds what ReleaseTasks needs.
type Release struct {
	Worker   string
	Attempts []Attempt
	// Reason says why the worker gives the tasks back; it becomes the
	// detail of their events.
	Reason string
	// Count makes the attempts count against the retry budget: their code
	// ran, and may have done part of its work.
	Count bool
	Now   time.Time
}

// Results is a batch of task results for Finish.
type Results struct {
	Now         time.Time
	Completions []Completion
	Retries     []Retry
	Failures    []Failure
	Sleeps      []Sleep
	Spawns      []Spawn
	Awaits      []Await
	// HandOff, when its Limit is positive, lets Finish hand children its
	// completions make ready to the recording worker.
	HandOff HandOff
}

// HandOff lets Finish give up to Limit children that its completions make
// ready straight to the worker recording them, as ClaimTasks would have
// (RUNNING under a lease for Worker, a new attempt, QUEUED and STARTED
// events at the time they were queued), instead of queueing them: a
// worker whose step just ended goes on with the run, and the queue is
// spared an entry and the child a claim.
//
// A child is handed off only where no other tenant's task, and no task of
// a higher priority, waits longer for it. Among the queued tasks of
// Versions (all when empty), as the queue was before the batch: the
// first in the queue's order, if any, is of the child's tenant, and that
// tenant has none in a higher lane than the child's (see Lane). Within a
// tenant and a lane, a run under way goes on before the tenant's other
// queued tasks of that lane: depth first, as a worker with a slot free
// claims them next. Only plain tasks (code that cannot be skipped) of
// Versions, with no concurrency or rate limit, and whose labels the
// worker has (Labels, as Claim.Labels), are handed off; "the queue"
// above is what the worker could claim. Which children go, when more
// qualify than Limit, is the store's choice.
type HandOff struct {
	Worker string
	// Versions are the workflow versions the worker serves, as in Claim.
	Versions []string
	Labels   []string
	Limit    int
}

// Len is the number of results in the batch.
func (r *Results) Len() int {
	return len(r.Completions) + len(r.Retries) + len(r.Failures) + len(r.Sleeps) + len(r.Spawns) + len(r.Awaits)
}

// Await makes a wait task wait for an event (see Events): the task
// becomes WAITING (a WAITING event), or, when an event it is waiting for
// was sent already, is queued woken at once with that event's payload as
// its output. With Deadline set, a durable timer wakes it then, with no
// output, unless an event came first.
type Await struct {
	Attempt
	// Event is the name of the event waited for.
	Event string
	// Keyed is true for a wait with a key: events sent with EventKey
	// reach it, besides those sent to its run.
	Keyed    bool
	EventKey string
	// Deadline is when the wait times out; zero for never.
	Deadline time.Time
}

// Spawn creates child runs for a running task and makes it wait for them:
// the task becomes WAITING (a WAITING event) and Runs are created as
// CreateRuns creates runs, each with Parent naming the task. The task is
// queued again, woken, when every run of Runs has completed, or as soon
// as one ends otherwise; with no Runs it is queued woken at once. Runs
// are created only if the task is still running in the attempt (the
// result is stale otherwise). Each run carries the tags of the task's
// run, merged under its own (see NewRun.Tags). With Deadline set, a durable timer wakes
// the task then if it is still waiting; its child runs go on.
type Spawn struct {
	Attempt
	Runs     []NewRun
	Deadline time.Time
}

// Child is the i'th run of Runs as a store creates it: its Parent names
// the spawning task, at the Index the engine gave (zero when it gave no
// Parent).
func (sp *Spawn) Child(i int) NewRun {
	nr := sp.Runs[i]
	p := ParentRun{ID: sp.Key.Run, StepIndex: sp.Key.Step}
	if nr.Parent != nil {
		p.Index = nr.Parent.Index
	}
	nr.Parent = &p
	return nr
}

// Completion resolves a task: it completed (with Output) or was skipped.
type Completion struct {
	Attempt
	Skipped bool
	// Detail says why a task was skipped.
	Detail string
	Output []byte
	// Children are the step indexes of the task's children in its run.
	Children []int
	// Woken is true when a sleep task completes after its timer fired.
	Woken bool
}

// Retry reports a failed attempt that will be retried at At.
type Retry struct {
	Attempt
	Error    string
	TimedOut bool
	At       time.Time
}

// Failure reports a permanent failure.
type Failure struct {
	Attempt
	Error    string
	TimedOut bool
}

// Sleep puts a sleep task to sleep for For, measured from the time its
// SLEEPING event is stamped, so the event log never shows a sleep shorter
// than declared however late the result is recorded.
type Sleep struct {
	Attempt
	For time.Duration
}

// FinishResult reports what Finish did not apply, and the runs it ended.
type FinishResult struct {
	// Stale are results dropped because the task was no longer running in
	// that attempt.
	Stale []Attempt
	// Finished are runs that reached a terminal status.
	Finished []uuid.UUID
	// HandedOff are the children handed to the worker (see HandOff),
	// claimed as ClaimTasks claims.
	HandedOff []ClaimedTask
}

// CancelledRun is a run CancelRuns cancelled: what the engine needs to
// account for its end (metrics count ended runs by workflow and tenant).
// It is not a Run on purpose: a bulk cancel returns no more of each row
// than that, and a Run with most of its fields zero would misstate the
// run.
type CancelledRun struct {
	ID       uuid.UUID
	Workflow string
	Tenant   string
}

// RetryRuns holds what RetryRuns needs.
type RetryRuns struct {
	Runs []RetryRun
	Now  time.Time
}

// RetryRun is one run RetryRuns reopens, and the tasks it gives another
// chance.
type RetryRun struct {
	Run   uuid.UUID
	Reset []ResetTask
	// From names the step a rerun starts from; empty for a retry. A rerun
	// reopens a COMPLETED run too.
	From string
}

// Detail is what the QUEUED event of a task RetryRuns queues says.
func (r RetryRun) Detail() string {
	if r.From != "" {
		return "rerun from " + r.From
	}
	return "run retried"
}

// Reopens reports whether RetryRuns reopens a run of this status.
func (r RetryRun) Reopens(s RunStatus) bool {
	return s == RunFailed || s == RunCancelled || (s == RunCompleted && r.From != "")
}

// ResetTask is a task RetryRuns gives another chance.
type ResetTask struct {
	Step    int
	Pending int
}

// Stuck holds what StuckTasks needs.
type Stuck struct {
	Before time.Time
	Limit  int
}

// StuckTask is a task making no progress, the one stuck-task type from
// the store to the user: runtime.StuckTask is this type, and its JSON is
// what trellis runs stuck -format json prints of each step. A store fills
// in every field but Step, the step's name, which the engine names from
// the run's workflow version (runtime.Engine.StuckRuns). The task's key,
// its run's facts and its attempt are not shown: runtime.StuckRun holds
// the run's.
type StuckTask struct {
	Key      TaskKey `json:"-"`
	Workflow string  `json:"-"`
	Version  string  `json:"-"`
	Tenant   string  `json:"-"`
	// Step is the step's name ("step N" when the version has no step N);
	// empty as a store returns it.
	Step   string     `json:"step"`
	Status TaskStatus `json:"status"`
	// Attempt is the store's attempt number of the task.
	Attempt int `json:"-"`
	// Worker holds a RUNNING task.
	Worker string `json:"worker,omitempty"`
	// Since is when the task was claimed (RUNNING), queued (QUEUED), or
	// its timer was due (SLEEPING, RETRYING).
	Since time.Time `json:"since"`
}

// FiredTimer is a timer FireTimers fired.
type FiredTimer struct {
	Key TaskKey
	// Sleep is true for the end of a sleep, false for the end of a retry
	// backoff.
	Sleep bool
	// Due is when the timer was due: it fired late by the time FireTimers
	// was given less Due.
	Due time.Time
	// Completed is true for a sleep step completed by FireTimers, and
	// RunFinished when its run completed with it. Workflow, Version and
	// Tenant are its run's.
	Completed, RunFinished    bool
	Workflow, Version, Tenant string
}

// FiredRunTimer is a run timer FireRunTimers fired on a running run.
type FiredRunTimer struct {
	ID       uuid.UUID
	Workflow string
	Tenant   string
	// Started is true for a delayed run's start, false for a deadline,
	// which failed the run.
	Started bool
	// Due is when the timer was due: it fired late by FireRunTimers's now
	// less Due.
	Due time.Time
}

// DeadlineError is the error of a run whose deadline of timeout passed,
// as its Failure records it.
func DeadlineError(timeout time.Duration) string {
	return fmt.Sprintf("run deadline of %s passed", shortDuration(timeout))
}

// shortDuration writes d as time.Duration does, without its zero minutes
// and seconds: 1h rather than 1h0m0s, 1h30m rather than 1h30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// DeadlineDetail is the detail of the CANCELLED events of the tasks a
// run's deadline cancelled.
const DeadlineDetail = "run deadline passed"

// QueueDepth is what QueueDepth counts.
type QueueDepth struct {
	// Queued and Running count the tasks of every tenant.
	Queued  int
	Running int
	// Tenants are the tenants with the most queued tasks, most first, as
	// many as were asked for; the tasks of tenants left out are in the
	// totals only.
	Tenants []TenantDepth
}

// TenantDepth is the live work of one tenant.
type TenantDepth struct {
	Tenant  string
	Queued  int
	Running int
}

// Recover holds what RecoverTasks needs.
type Recover struct {
	StaleBefore time.Time
	Limit       int
	Now         time.Time
}

// RecoverResult reports what RecoverTasks or ReleaseTasks did.
type RecoverResult struct {
	Requeued []Attempt
	Failed   []Attempt
}
