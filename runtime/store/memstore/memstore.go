// Package memstore is the in-memory store: the same semantics as the
// Postgres store (it passes the same conformance suite), kept in maps
// behind one mutex. It is what tests and single-process examples use; the
// state lives as long as the Store value.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Store is an in-memory store.Store, safe for concurrent use by any number
// of engines.
type Store struct {
	mu        sync.Mutex
	workflows map[string]store.WorkflowVersion
	runs      map[uuid.UUID]*run
	idem      map[idemKey]uuid.UUID
	running   map[store.TaskKey]*task // RUNNING tasks, for recovery
	workers   map[string]time.Time    // last heartbeat of each worker
	// workerVersions are the workflow versions each worker announced.
	workerVersions map[string][]string
	// workerLabels are the labels each worker announced.
	workerLabels map[string][]string
	queue        readyQueue
	limits       map[string]*limitLine // by limit key (see limits.go)
	runLines     map[string]*runLine   // by run limit key (see runlimits.go)
	debounced    map[string]*run       // the run waiting for its window, by debounce key (see debounce.go)
	rates        map[string]time.Time  // due time by rate key (see rates.go)
	timers       timerQueue
	runTimers    map[uuid.UUID]*runTimer // each run's pending start or deadline (see runtimers.go)
	eventSeq     int64
	subs         map[int]chan store.Notification
	subSeq       int
	leader       string
	schedules    map[scheduleKey]store.Schedule
	pauses       map[pauseKey]time.Time   // paused workflows, when (see pauses.go)
	children     map[store.TaskKey][]*run // child runs by the task that spawned them, in creation order
	// Events (see events.go): those sent to runs and with keys, in the
	// order they were sent, and the waits for them.
	byRun    map[uuid.UUID][]*sent
	byKey    map[keyAddr][]*sent
	sentIDs  map[sentID]bool // the IDs of the events in byKey
	waits    map[store.TaskKey]*awaiting
	keyWaits map[keyAddr]map[store.TaskKey]*awaiting
}

var _ store.Store = (*Store)(nil)

type idemKey struct{ workflow, tenant, key string }

type run struct {
	rec        store.Run
	tasks      []*task
	pending    []int         // per step: parents still to resolve
	unresolved int           // tasks (failure handler excluded) not yet COMPLETED or SKIPPED
	onFailure  int           // step index of the failure handler, or -1
	timeout    time.Duration // NewRun.Timeout, for the deadline's message
	events     []store.Event
	control    *runControl // nil unless the run has a run limit or a debounce key
}

// runControl is what a run with a run limit (runlimits.go) or a debounce
// key (debounce.go) keeps. Most runs have neither, and every field here
// would be scanned by the garbage collector in every run record, so it
// lives apart (a chain of five ran 8-9% slower with these fields in run).
type runControl struct {
	limit      store.RunLimit
	holds      bool           // holds a slot of its limit's key
	parked     []int          // while it waits in its key's line or for its window: its roots, QUEUED, to admit when let in
	debounce   store.Debounce // see debounce.go
	due, since time.Time      // while it waits for its debounce window: when it starts, and its burst's first run's creation
}

type task struct {
	rec         store.Task
	run         *run
	plain       bool
	parents     []int
	maxAttempts int
	prior       int // attempts before the last run retry
	claimedAt   time.Time
	gen         int // bumped whenever the task leaves the queue or a timer, invalidating old entries
	entryLane   int // 1 + the lane of its valid queue entry; 0 for none (see readyQueue.highestLane)
	limit       store.Limit
	rate        store.Rate
	paced       bool     // put off by its rate limit: its timer is its turn (see rates.go)
	turn        bool     // queued for its turn: its next claim starts it
	holds       bool     // holds a slot of its limit's key
	waiting     bool     // waits in its limit's line (see limits.go)
	fresh       bool     // ... as a root of a new run
	awaiting    int      // WAITING: child runs still to complete (see children.go)
	waitEvent   string   // the event a wait task waits or waited for (see events.go)
	labels      []string // the worker labels it needs (store.NewTask.Labels)
}

// New returns an empty store.
func New() *Store {
	return &Store{
		workflows:      map[string]store.WorkflowVersion{},
		limits:         map[string]*limitLine{},
		runLines:       map[string]*runLine{},
		debounced:      map[string]*run{},
		rates:          map[string]time.Time{},
		runs:           map[uuid.UUID]*run{},
		idem:           map[idemKey]uuid.UUID{},
		running:        map[store.TaskKey]*task{},
		workers:        map[string]time.Time{},
		workerVersions: map[string][]string{},
		workerLabels:   map[string][]string{},
		queue:          newReadyQueue(),
		subs:           map[int]chan store.Notification{},
		schedules:      map[scheduleKey]store.Schedule{},
		pauses:         map[pauseKey]time.Time{},
		children:       map[store.TaskKey][]*run{},
		runTimers:      map[uuid.UUID]*runTimer{},
		byRun:          map[uuid.UUID][]*sent{},
		byKey:          map[keyAddr][]*sent{},
		sentIDs:        map[sentID]bool{},
		waits:          map[store.TaskKey]*awaiting{},
		keyWaits:       map[keyAddr]map[store.TaskKey]*awaiting{},
	}
}

// SaveWorkflow implements store.Workflows.
func (s *Store) SaveWorkflow(_ context.Context, w store.WorkflowVersion) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workflows[w.Version]; !ok {
		w.Spec = append([]byte(nil), w.Spec...)
		s.workflows[w.Version] = w
	}
	return nil
}

// LoadWorkflow implements store.Workflows.
func (s *Store) LoadWorkflow(_ context.Context, version string) (store.WorkflowVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workflows[version]
	if !ok {
		return store.WorkflowVersion{}, fmt.Errorf("workflow version %s: %w", version, store.ErrNotFound)
	}
	return w, nil
}

// WorkflowVersions implements store.Workflows.
func (s *Store) WorkflowVersions(_ context.Context, names []string) ([]store.WorkflowVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.WorkflowVersion
	for _, w := range s.workflows {
		if slices.Contains(names, w.Name) {
			w.Spec = nil
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b store.WorkflowVersion) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}

// event appends an event to the run's log. Callers hold s.mu.
func (s *Store) event(r *run, step int, typ store.EventType, attempt int, at time.Time, detail string) {
	s.eventSeq++
	r.events = append(r.events, store.Event{
		ID: s.eventSeq, Run: r.rec.ID, StepIndex: step, Type: typ, Attempt: attempt, At: at, Detail: detail,
	})
}

// timerEvent appends a SLEEPING or RETRYING event, which says when the
// task's timer is due. Callers hold s.mu.
func (s *Store) timerEvent(r *run, step int, typ store.EventType, attempt int, at, wakeAt time.Time, detail string) {
	s.event(r, step, typ, attempt, at, detail)
	r.events[len(r.events)-1].WakeAt = wakeAt
}

// stamp returns the time a change of t at now is recorded at: now, or the
// task's previous change when that is later (see store's Time), and makes
// it the task's latest change. Callers hold s.mu.
func stamp(t *task, now time.Time) time.Time {
	if now.Before(t.rec.UpdatedAt) {
		now = t.rec.UpdatedAt
	}
	t.rec.UpdatedAt = now
	return now
}

// setStatus changes a task's status at now, keeping the running set and
// the tenant's running and queued counts in step, and returns the time the change is
// recorded at (see stamp). Callers hold s.mu.
func (s *Store) setStatus(t *task, status store.TaskStatus, now time.Time) time.Time {
	if t.rec.Status == store.TaskRunning && status != store.TaskRunning {
		delete(s.running, t.rec.Key)
		s.queue.tenantRunning(t.run.rec.Tenant, -1)
	}
	if status == store.TaskRunning && t.rec.Status != store.TaskRunning {
		s.running[t.rec.Key] = t
		s.queue.tenantRunning(t.run.rec.Tenant, +1)
	}
	if t.rec.Status == store.TaskQueued && status != store.TaskQueued {
		s.queue.tenantQueued(t.run.rec.Tenant, -1)
	}
	if status == store.TaskQueued && t.rec.Status != store.TaskQueued {
		s.queue.tenantQueued(t.run.rec.Tenant, +1)
	}
	if t.rec.Status == store.TaskQueued || t.rec.Status == store.TaskSleeping || t.rec.Status == store.TaskRetrying || t.rec.Status == store.TaskWaiting {
		t.gen++ // its queue entry or timer is void now
		s.queue.void(t)
	}
	if !t.rec.Status.Resolved() && status.Resolved() && t.rec.Kind != store.KindOnFailure {
		t.run.unresolved--
	}
	if t.rec.Status.Resolved() && !status.Resolved() && t.rec.Kind != store.KindOnFailure {
		t.run.unresolved++
	}
	t.rec.Status = status
	if status.Terminal() && t.limit.Key != "" {
		s.release(t)
	}
	at := stamp(t, now)
	if status.Terminal() {
		t.rec.FinishedAt = at
	} else {
		t.rec.FinishedAt = time.Time{}
	}
	return at
}

// enqueue puts a task of a run in progress on the ready queue, in the
// run's in-progress lane, and returns the time it was queued at. Callers
// hold s.mu.
func (s *Store) enqueue(t *task, wake bool, now time.Time) time.Time {
	at := s.setStatus(t, store.TaskQueued, now)
	s.queue.push(t, wake, store.Lane(t.run.rec.Priority, true))
	return at
}

// enqueueNew puts a root task of a new run on the ready queue, in the
// run's new lane. Callers hold s.mu.
func (s *Store) enqueueNew(t *task, now time.Time) time.Time {
	at := s.setStatus(t, store.TaskQueued, now)
	s.queue.push(t, false, store.Lane(t.run.rec.Priority, false))
	return at
}

// notify sends a notification to every listener that has room for it.
// Callers hold s.mu.
func (s *Store) notify(n store.Notification) {
	for _, ch := range s.subs {
		select {
		case ch <- n:
		default:
		}
	}
}

func (s *Store) lookup(key store.TaskKey) (*task, bool) {
	r, ok := s.runs[key.Run]
	if !ok || key.Step < 0 || key.Step >= len(r.tasks) {
		return nil, false
	}
	return r.tasks[key.Step], true
}
