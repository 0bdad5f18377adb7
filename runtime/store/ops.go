package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Ops is what operators read: runs by filter, the workers and the leader,
// the queue, and the stored workflow versions. The engine never calls
// these; the operations API (package runtime/ops), the trellis CLI and
// dashboards do. Each reads without locking anything the engine waits
// on, and is cheap however much history the store keeps: ListRuns reads
// one page through an index, the others read only live work.
type Ops interface {
	// ListRuns returns up to Limit runs matching the query, newest first
	// (by CreatedAt, then by ID, both descending), starting after
	// q.After. A run's Input is read only when the query asks for it.
	ListRuns(ctx context.Context, q RunQuery) ([]Run, error)
	// ScanRuns reads runs in ListRuns's order, at most q.Limit of them
	// (DefaultRunLimit when not positive): the next runs after q.After
	// that every filter of q selects but InputContains. It returns those
	// of them whose input contains one of q.InputContains (all of them
	// when it is empty), and, when it read Limit runs, the position of
	// the last: another scan from there goes on, and nil means the
	// listing ended. Its cost is bounded by Limit however few runs match,
	// where ListRuns with InputContains reads on until Limit runs match.
	ScanRuns(ctx context.Context, q RunQuery) (runs []Run, reached *RunCursor, err error)
	// ListWorkers returns the workers the store knows (those that have
	// heartbeated and not yet been forgotten), by id, with the tasks each
	// holds and whether it leads.
	ListWorkers(ctx context.Context) ([]Worker, error)
	// QueueStats returns, per tenant and workflow with tasks queued or
	// running, how many are queued and running and how long the queue's
	// head has waited; by tenant, then workflow.
	QueueStats(ctx context.Context) ([]QueueStat, error)
	// Unserved returns the queued work that no live worker can claim (see
	// Unserved), the groups with the most tasks first, at most Limit
	// groups. It reads the ready queue and the workers, and locks nothing.
	Unserved(ctx context.Context, q UnservedQuery) ([]Unserved, error)
	// QueueSteps returns the queued tasks of one tenant's runs of one
	// workflow per workflow version and step: how many, how many of them
	// wait for a concurrency slot, and since when the oldest waits; by
	// version, then step. Its cost grows with the group's queued tasks
	// (QueueStats says how many).
	QueueSteps(ctx context.Context, tenant, workflow string) ([]QueueStepStat, error)
	// QueueVersions returns, per workflow version with tasks on the ready
	// queue, how many and when the task at the head of its queue was
	// queued; by workflow, then version. Claims take a version's tasks
	// only for workers that serve it (Claim.Versions): what the engine
	// compares with the versions live workers serve (see
	// runtime.Engine.Unserved). It reads the ready queue only.
	QueueVersions(ctx context.Context) ([]QueueVersionStat, error)
	// ListWorkflows returns every stored workflow version (Spec
	// included), by name, then newest first.
	ListWorkflows(ctx context.Context) ([]WorkflowVersion, error)
	// InFlight returns the workflow versions with runs in progress
	// (RunRunning), by workflow, then version, at most limit of them
	// (DefaultInFlightLimit when not positive), and whether there are
	// more: each with its stored spec (Spec empty when the version is not
	// stored), how many runs are in progress, and per step how many of
	// them have that step's task not ended (see VersionInFlight). What
	// trellis lint -against checks a change against. It reads the runs in
	// progress and their tasks, counted in the store, not returned.
	InFlight(ctx context.Context, limit int) (versions []VersionInFlight, more bool, err error)
	// RunActivity counts runs over a window of time, a bucket at a time:
	// the runs created in each bucket, and those that finished in it, by
	// the status they finished in; and the runs running now. Its cost
	// grows with the runs created and finished within the window (each is
	// one index entry), not with the history before it.
	RunActivity(ctx context.Context, q ActivityQuery) (Activity, error)
	// EventCounts returns how many events the log of each run of ids
	// holds; an unknown id has no entry. A log only grows (every change
	// of a run or a task appends to it, in both stores) until the run is
	// purged, so a count that moved means the run changed: a page that
	// shows runs polls this one cheap read for all of them, and reads a
	// run in full only when its count moved.
	EventCounts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error)
	// ChildRunCounts counts the runs the steps of run started (see
	// Spawn), by step and status, in that order; a run without any has
	// none. It reads an index of the child runs, not the runs.
	ChildRunCounts(ctx context.Context, run uuid.UUID) ([]ChildRunCount, error)
	// ChildRunPreviews returns, for each run of parents whose steps
	// started runs, in the order of parents, how many runs they started
	// by status, and the first `first` of them (without their Input) in
	// the order of the parent's steps, then of their Parent.Index, then
	// of creation: what a listing shows beneath a parent. It reads the
	// index of child runs: the counts read an entry per child run, the
	// runs at most `first` entries per parent however many it started.
	ChildRunPreviews(ctx context.Context, parents []uuid.UUID, first int) ([]ChildRunPreview, error)
	// WaitingRuns counts, by workflow, the runs waiting for a slot of
	// their RunLimit key (Run.Waiting) or for their Debounce window
	// (Run.DebouncedUntil); a workflow with none has no entry. It reads
	// the lines of the keys, not the runs.
	WaitingRuns(ctx context.Context) (map[string]int, error)
}

// DefaultInFlightLimit is how many versions InFlight returns when not
// told.
const DefaultInFlightLimit = 500

// VersionInFlight is a workflow version with runs in progress.
type VersionInFlight struct {
	// Version is the stored version (its Spec empty when the store does
	// not hold it).
	Version WorkflowVersion
	// Runs is how many of its runs are in progress.
	Runs int
	// Steps counts, by step index, the runs in progress whose task of the
	// step has not ended (PENDING, QUEUED, RUNNING, SLEEPING, RETRYING or
	// WAITING): those whose step is still to run, running, or waiting. A
	// step with none is absent; by step. The failure handler's index is
	// the number of steps.
	Steps []StepInFlight
}

// StepInFlight is how many runs in progress of one version have one
// step's task not ended.
type StepInFlight struct {
	Step int
	Runs int
}

// ChildRunPreview is what a listing shows of the runs one run's steps
// started: how many by status, and the first few.
type ChildRunPreview struct {
	Parent uuid.UUID
	// Counts counts the runs by status; a status without any is absent.
	Counts map[RunStatus]int
	// First are the first runs (see Ops.ChildRunPreviews).
	First []Run
}

// Total is how many runs the parent's steps started.
func (p ChildRunPreview) Total() int {
	n := 0
	for _, c := range p.Counts {
		n += c
	}
	return n
}

// ChildRunCount is how many runs one step of a run started that are in
// one status.
type ChildRunCount struct {
	Step   int
	Status RunStatus
	Runs   int
}

// ActivityQuery is the window RunActivity counts over: Buckets buckets of
// Bucket each, the first starting at From.
type ActivityQuery struct {
	From    time.Time
	Bucket  time.Duration
	Buckets int
}

// To is when the window ends (exclusive).
func (q ActivityQuery) To() time.Time { return q.From.Add(time.Duration(q.Buckets) * q.Bucket) }

// Activity is how many runs were created and finished over a window, a
// bucket at a time, and how many run now: what RunActivity counts, and
// what a dashboard charts as throughput (ops.Admin.Activity returns it,
// and its JSON is what a dashboard reads). It is the one activity type
// from the store to the user.
type Activity struct {
	// From and To bound the window (To exclusive); Bucket is each
	// bucket's length.
	From   time.Time     `json:"from"`
	To     time.Time     `json:"to"`
	Bucket time.Duration `json:"bucket"`
	// Buckets are the window's buckets, in time order, every one of them
	// present (with zero counts when nothing happened in it).
	Buckets []ActivityBucket `json:"buckets"`
	// Running is how many runs are RUNNING now, whenever they were
	// created.
	Running int `json:"running"`
}

// Totals adds up the buckets of the window.
func (a *Activity) Totals() ActivityBucket {
	t := ActivityBucket{Start: a.From}
	for _, b := range a.Buckets {
		t.Created += b.Created
		t.Completed += b.Completed
		t.Failed += b.Failed
		t.Cancelled += b.Cancelled
	}
	return t
}

// ActivityBucket counts the runs of one bucket of an Activity window.
type ActivityBucket struct {
	Start time.Time `json:"start"`
	// Created counts the runs created in the bucket.
	Created int `json:"created"`
	// Completed, Failed and Cancelled count the runs that finished in the
	// bucket (by FinishedAt) and are in that status now (a failed run
	// that was retried since counts where it finishes again).
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// NewActivity returns an Activity of q's window and buckets, all counts
// zero, for a store to fill in.
func NewActivity(q ActivityQuery) Activity {
	a := Activity{From: q.From, To: q.To(), Bucket: q.Bucket, Buckets: make([]ActivityBucket, max(q.Buckets, 0))}
	for i := range a.Buckets {
		a.Buckets[i].Start = q.From.Add(time.Duration(i) * q.Bucket)
	}
	return a
}

// Finished is how many runs finished in the bucket, whatever their
// status.
func (b ActivityBucket) Finished() int { return b.Completed + b.Failed + b.Cancelled }

// AddFinished adds n runs that finished in status to the bucket.
func (b *ActivityBucket) AddFinished(status RunStatus, n int) {
	switch status {
	case RunCompleted:
		b.Completed += n
	case RunFailed:
		b.Failed += n
	case RunCancelled:
		b.Cancelled += n
	}
}

// DefaultRunLimit is how many runs ListRuns returns when the query sets no
// Limit.
const DefaultRunLimit = 100

// RunQuery selects runs for ListRuns. Every filter is optional: a zero
// field matches every run.
type RunQuery struct {
	Workflow string
	// Statuses keeps runs in any of these statuses.
	Statuses       []RunStatus
	Tenant         string
	IdempotencyKey string
	// CreatedFrom keeps runs created at or after it; CreatedTo those
	// created before it.
	CreatedFrom time.Time
	CreatedTo   time.Time
	// FinishedFrom keeps runs that finished (completed, failed or were
	// cancelled) at or after it; a run retried since has no finish time
	// until it ends again. The listing's order stays the creation order.
	FinishedFrom time.Time
	// Parent, when set, keeps the runs started by the steps of that run
	// (map items, child workflows).
	Parent uuid.UUID
	// TopLevel keeps only the runs no step started (those without a
	// Parent): a listing that shows child runs beneath their parents.
	TopLevel bool
	// IDPrefix, when set, keeps the runs whose id begins with it: a
	// person names a run by the start of its id. A store reads the runs
	// in its range (RunIDPrefix.Range) through the index on run ids.
	IDPrefix RunIDPrefix
	// After continues a listing: only runs that come after the cursor in
	// the listing's order are returned. The cursor of a page's last run
	// gives the next page, whatever was created meanwhile.
	After *RunCursor
	// InputContains, when not empty, keeps runs whose input contains one
	// of these JSON documents, as Postgres's jsonb @> reads containment:
	// each field of a document's object has a value in the input's that
	// contains it, each element of a document's array is contained by an
	// element of the input's, and scalars are equal (numbers by value).
	InputContains []json.RawMessage
	// Tags, when not empty, keeps the runs that carry every one of these
	// tags with the same value. Postgres reads the runs through an index
	// of tags (schema/0019).
	Tags map[string]string
	// WithInput reads each run's Input too (ListRuns leaves it nil
	// otherwise).
	WithInput bool
	// Limit bounds how many runs are returned (DefaultRunLimit when not
	// positive).
	Limit int
}

// RunCursor is a position in a run listing: the creation time and id of
// the last run seen. Runs created together share a time; the id breaks
// the tie.
type RunCursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// CursorOf returns the cursor that continues a listing after r.
func CursorOf(r Run) RunCursor { return RunCursor{CreatedAt: r.CreatedAt, ID: r.ID} }

// Worker is a worker the store knows: one that has heartbeated, and has
// not been forgotten (the leader forgets workers that fell silent and
// hold nothing). It is the one worker type from the store to the user:
// ops.Admin.Workers returns it, and its JSON is what trellis workers
// -format json prints.
type Worker struct {
	ID string `json:"id"`
	// HeartbeatAt is when the worker last said it was alive.
	HeartbeatAt time.Time `json:"heartbeatAt"`
	// Alive is true when the worker heartbeated within the engines'
	// StaleAfter; the tasks of a worker that is not are recovered. A store
	// leaves it false: ops.Admin.Workers sets it by the engine's clock.
	Alive bool `json:"alive"`
	// Leases is how many tasks it holds (RUNNING under its name).
	Leases int `json:"leases"`
	// Leader is true for the worker holding leadership (see
	// Coordination): the one that fires timers and recovers tasks.
	Leader bool `json:"leader"`
	// Versions are the workflow versions it registered, as it announced
	// them when it started (AnnounceWorker), sorted; empty for a worker
	// that registered none.
	Versions []string `json:"versions,omitempty"`
	// Labels are the labels it declared (runtime.Config.Labels), as it
	// announced them, "key=value", sorted; empty for none.
	Labels []string `json:"labels,omitempty"`
}

// UnservedQuery says which workers are live for Unserved: those that
// heartbeated at or after AliveSince.
type UnservedQuery struct {
	AliveSince time.Time
	Limit      int
}

// Unserved is queued work that no live worker can claim, grouped by
// workflow and by why: tasks on the ready queue that need worker labels
// (NewTask.Labels) that no live worker announced all of (AnnounceWorker).
// They wait, neither failed nor lost, until such a worker starts. It is
// the one record of work that waits for a worker that is not there:
// reasons other than labels belong here too.
type Unserved struct {
	Workflow string `json:"workflow"`
	// Labels are the worker labels the tasks need, "key=value", sorted.
	Labels []string `json:"labels"`
	// Tasks is how many tasks wait.
	Tasks int `json:"tasks"`
	// OldestQueuedAt is when the one that waited longest was queued.
	OldestQueuedAt time.Time `json:"oldestQueuedAt"`
}

// WorkerState is what a worker's heartbeats say of it, in the one word
// the trellis command and the dashboard show.
type WorkerState string

const (
	// WorkerAlive is a worker that heartbeated within the engines'
	// StaleAfter.
	WorkerAlive WorkerState = "alive"
	// WorkerSilent is a worker that has not heartbeated for StaleAfter:
	// it stopped (cleanly, or killed), hangs or lost the database, which
	// its heartbeats cannot tell apart. The leader recovers the tasks it
	// holds, then forgets it.
	WorkerSilent WorkerState = "silent"
)

// State says whether w is alive or silent.
func (w Worker) State() WorkerState {
	if w.Alive {
		return WorkerAlive
	}
	return WorkerSilent
}

// QueueStepStat is the queued work of one step of one workflow version,
// of one tenant's runs (Ops.QueueSteps).
type QueueStepStat struct {
	Version string `json:"version"`
	// Step is the step's index in the version's steps.
	Step int `json:"step"`
	// Queued, Held and Paced count as QueueStat's do.
	Queued int `json:"queued"`
	Held   int `json:"held,omitempty"`
	Paced  int `json:"paced,omitempty"`
	// OldestQueuedAt is when the step's longest-waiting task was queued.
	OldestQueuedAt time.Time `json:"oldestQueuedAt"`
}

// QueueVersionStat is the work on the ready queue of one workflow version
// (Ops.QueueVersions).
type QueueVersionStat struct {
	Workflow string
	Version  string
	Queued   int
	// OldestQueuedAt is when the task at the head of the version's queue
	// was queued.
	OldestQueuedAt time.Time
}

// QueueStat is the live work of one tenant's runs of one workflow, the
// one queue type from the store to the user: ops.Admin.Queue returns it
// (as ops.QueueGroup), and its JSON is what trellis queue -format json
// prints.
type QueueStat struct {
	Tenant   string `json:"tenant"`
	Workflow string `json:"workflow"`
	// Queued is how many tasks wait to be claimed, Running how many are
	// claimed and running.
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// Held is how many of the queued tasks wait for a slot of their
	// concurrency limit (off the ready queue: no worker claims them
	// until a task holding a slot of their key ends), and Paced how many
	// wait for their turn under a rate limit (off the ready queue: a
	// timer queues each again at its turn).
	Held  int `json:"held,omitempty"`
	Paced int `json:"paced,omitempty"`
	// OldestQueuedAt is when the task at the head of the group's queue
	// (the next to be claimed) was queued; zero (and absent from the
	// JSON) when none is queued. A tenant's tasks are claimed in the
	// order they were queued, so this is the longest wait of the group.
	OldestQueuedAt time.Time `json:"oldestQueuedAt,omitzero"`
	// Paused says that the group's workflow is paused for its tenant
	// (see Pauses): its queued tasks wait for the resume. Stores leave it
	// false; ops.Admin.Queue sets it.
	Paused bool `json:"paused,omitempty"`
}
