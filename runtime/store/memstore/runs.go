package memstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/store"
)

// CreateRuns implements store.Runs.
func (s *Store) CreateRuns(_ context.Context, p store.CreateRuns) ([]store.CreateRunResult, error) {
	if p.Tx != nil {
		return nil, fmt.Errorf("memory store: %w", store.ErrTxUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, nr := range p.Runs {
		if _, err := store.RunPriority(nr.Priority); err != nil {
			return nil, fmt.Errorf("creating run: %w", err)
		}
		for i, nt := range nr.Tasks {
			if nt.Step != i {
				return nil, fmt.Errorf("creating run: task %d has step %d; tasks must be in step order", i, nt.Step)
			}
		}
	}
	out := make([]store.CreateRunResult, len(p.Runs))
	queued := false
	for i, nr := range p.Runs {
		if _, earlier := s.runs[nr.ID]; earlier {
			out[i] = store.CreateRunResult{ID: nr.ID, Created: true}
			continue
		}
		key := idemKey{nr.Workflow, nr.Tenant, nr.IdempotencyKey}
		if nr.IdempotencyKey != "" {
			if id, ok := s.idem[key]; ok {
				out[i] = store.CreateRunResult{ID: id}
				continue
			}
			s.idem[key] = nr.ID
		}
		if s.createRun(nr, p.Now) {
			queued = true
		}
		out[i] = store.CreateRunResult{ID: nr.ID, Created: true}
	}
	if queued {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return out, nil
}

// createRun adds a run and queues its roots, reporting whether it queued
// any. Callers hold s.mu.
func (s *Store) createRun(nr store.NewRun, now time.Time) bool {
	priority, _ := store.RunPriority(nr.Priority) // checked by CreateRuns
	r := &run{
		rec: store.Run{
			ID: nr.ID, Workflow: nr.Workflow, Version: nr.Version, Tenant: nr.Tenant,
			IdempotencyKey: nr.IdempotencyKey, Priority: priority, Status: store.RunRunning, TraceContext: nr.TraceContext,
			Input: append([]byte(nil), nr.Input...), CreatedAt: now, Parent: cloneParent(nr.Parent),
			Tags: store.MergeTags(nil, nr.Tags),
		},
		tasks:     make([]*task, len(nr.Tasks)),
		pending:   make([]int, len(nr.Tasks)),
		onFailure: -1,
	}
	for i, nt := range nr.Tasks {
		r.tasks[i] = &task{
			rec: store.Task{
				Key: store.TaskKey{Run: nr.ID, Step: i}, Kind: nt.Kind, Status: store.TaskPending, UpdatedAt: now,
			},
			run: r, plain: nt.Plain, parents: nt.Parents, maxAttempts: nt.MaxAttempts, limit: nt.Limit, rate: nt.Rate,
			labels: slices.Clone(nt.Labels),
		}
		r.pending[i] = nt.Pending
		if nt.Kind == store.KindOnFailure {
			r.onFailure = i
		} else {
			r.unresolved++
		}
	}
	if nr.Parent != nil {
		if parent, ok := s.runs[nr.Parent.ID]; ok {
			r.rec.Tags = store.MergeTags(parent.rec.Tags, nr.Tags)
		}
	}
	s.runs[nr.ID] = r
	s.setRunTimers(r, nr, now)
	if nr.Parent != nil {
		s.children[nr.Parent.Task()] = append(s.children[nr.Parent.Task()], r)
	}
	if !r.rec.StartAt.IsZero() {
		return false // delayed: its timer starts it (the engine delays no run with a run limit)
	}
	cancelled := ""
	let := true
	if nr.RunLimit.Key != "" || nr.Debounce.Key != "" {
		r.control = &runControl{limit: nr.RunLimit, debounce: nr.Debounce}
	}
	switch {
	case nr.RunLimit.Key != "":
		let, cancelled = s.admitRun(r, now)
	case nr.Debounce.Key != "":
		s.debounceRun(r, now)
		let = false
	}
	if let {
		return s.queueRoots(r, now, "")
	}
	for i, t := range r.tasks {
		if r.pending[i] == 0 && t.rec.Kind != store.KindOnFailure && t.rec.Status == store.TaskPending {
			s.event(r, i, store.EventQueued, 0, s.setStatus(t, store.TaskQueued, now), "")
			r.control.parked = append(r.control.parked, i)
		}
	}
	if cancelled != "" {
		s.cancelRun(r, now, cancelled)
	}
	return false
}

// queueRoots queues the tasks of a run that wait for no parent (the
// failure handler excepted), reporting whether it queued any. Callers
// hold s.mu.
func (s *Store) queueRoots(r *run, now time.Time, detail string) bool {
	queued := false
	for i, t := range r.tasks {
		if r.pending[i] == 0 && t.rec.Kind != store.KindOnFailure && t.rec.Status == store.TaskPending {
			s.event(r, i, store.EventQueued, 0, s.admit(t, true, now), detail)
			queued = true
		}
	}
	return queued
}

// GetRun implements store.Runs.
func (s *Store) GetRun(_ context.Context, id uuid.UUID) (store.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r.row(), nil
}

// ListTasks implements store.Runs.
func (s *Store) ListTasks(_ context.Context, id uuid.UUID) ([]store.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r.taskRecords(), nil
}

// row is the run's record for a caller: a copy that shares nothing with
// the store (the engine fills in names on it).
func (r *run) row() store.Run {
	rec := r.rec
	rec.Input = append([]byte(nil), rec.Input...)
	if rec.Failure != nil {
		f := *rec.Failure
		rec.Failure = &f
	}
	rec.Parent = cloneParent(rec.Parent)
	rec.Tags = maps.Clone(rec.Tags)
	if c := r.control; c != nil && r.rec.Status == store.RunRunning && c.parked != nil {
		rec.Waiting = c.due.IsZero()
		rec.DebouncedUntil = c.due
	}
	return rec
}

func cloneParent(p *store.ParentRun) *store.ParentRun {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// taskRecords copies the run's tasks out. Callers hold s.mu.
func (r *run) taskRecords() []store.Task {
	out := make([]store.Task, len(r.tasks))
	for i, t := range r.tasks {
		out[i] = t.rec
		out[i].Output = append([]byte(nil), t.rec.Output...)
	}
	return out
}

// RunStatuses implements store.Runs.
func (s *Store) RunStatuses(_ context.Context, ids []uuid.UUID) (map[uuid.UUID]store.RunStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[uuid.UUID]store.RunStatus, len(ids))
	for _, id := range ids {
		if r, ok := s.runs[id]; ok {
			out[id] = r.rec.Status
		}
	}
	return out, nil
}

// GetRuns implements store.Runs.
func (s *Store) GetRuns(_ context.Context, ids []uuid.UUID) ([]store.RunWithTasks, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[uuid.UUID]bool, len(ids))
	var out []store.RunWithTasks
	for _, id := range ids {
		r, ok := s.runs[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, store.RunWithTasks{Run: r.row(), Tasks: r.taskRecords()})
	}
	slices.SortFunc(out, func(a, b store.RunWithTasks) int { return compareUUID(a.ID, b.ID) })
	return out, nil
}

// ListEvents implements store.Runs.
func (s *Store) ListEvents(_ context.Context, id uuid.UUID) ([]store.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return append([]store.Event(nil), r.events...), nil
}

// CancelRuns implements store.Runs.
func (s *Store) CancelRuns(_ context.Context, ids []uuid.UUID, now time.Time) ([]store.CancelledRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cancelled []store.CancelledRun
	for _, id := range sortedIDs(ids) {
		r, ok := s.runs[id]
		if !ok || r.rec.Status != store.RunRunning {
			continue
		}
		s.cancelRun(r, now, "run cancelled")
		cancelled = append(cancelled, store.CancelledRun{ID: id, Workflow: r.rec.Workflow, Tenant: r.rec.Tenant})
	}
	return cancelled, nil
}

// RetryRuns implements store.Runs.
func (s *Store) RetryRuns(_ context.Context, p store.RetryRuns) ([]uuid.UUID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rr := range p.Runs {
		r, ok := s.runs[rr.Run]
		if !ok {
			continue
		}
		for _, reset := range rr.Reset {
			if reset.Step < 0 || reset.Step >= len(r.tasks) {
				return nil, fmt.Errorf("retrying run %s: no step %d", rr.Run, reset.Step)
			}
		}
	}
	var reopened []uuid.UUID
	queued := false
	for _, rr := range p.Runs {
		r, ok := s.runs[rr.Run]
		if !ok || !rr.Reopens(r.rec.Status) {
			continue
		}
		r.rec.Status, r.rec.Failure, r.rec.FinishedAt = store.RunRunning, nil, time.Time{}
		if rr.From != "" {
			r.rec.RerunAt = p.Now
		}
		s.reopenRun(r)
		reopened = append(reopened, rr.Run)
		for _, reset := range rr.Reset {
			t := r.tasks[reset.Step]
			if t.rec.Status == store.TaskRunning {
				continue // still executing (a failure handler): leave it be
			}
			t.prior = t.rec.Attempt
			t.rec.Error, t.rec.Output, t.rec.Worker, t.rec.WakeAt = "", nil, "", time.Time{}
			r.pending[reset.Step] = reset.Pending
			if reset.Pending == 0 && t.rec.Kind != store.KindOnFailure {
				s.event(r, reset.Step, store.EventQueued, t.rec.Attempt, s.admit(t, false, p.Now), rr.Detail())
				queued = true
				continue
			}
			s.setStatus(t, store.TaskPending, p.Now)
		}
	}
	if queued {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return sortedIDs(reopened), nil
}

// sortedIDs returns ids in the order Postgres sorts uuids (bytewise),
// each once.
func sortedIDs(ids []uuid.UUID) []uuid.UUID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(out)
}

// cancelRun cancels a running run and its unfinished tasks. Callers hold
// s.mu.
func (s *Store) cancelRun(r *run, now time.Time, detail string) {
	for i, t := range r.tasks {
		if dag.Cancels(t.rec.Status) {
			at := s.setStatus(t, store.TaskCancelled, now)
			s.event(r, i, store.EventCancelled, t.rec.Attempt, at, detail)
		}
	}
	s.endRun(r, store.RunCancelled, now)
}

// endRun moves a run to a terminal status: a run that did not complete
// cancels its running child runs, and a child run counts against its
// parent task's wait (see store's Child runs). Callers hold s.mu.
func (s *Store) endRun(r *run, status store.RunStatus, now time.Time) {
	r.rec.Status = status
	r.rec.FinishedAt = now
	s.notify(store.Notification{Kind: store.RunFinished, Run: r.rec.ID})
	if c := r.control; c != nil {
		if c.limit.Key != "" {
			s.releaseRun(r, now)
		}
		if !c.due.IsZero() {
			s.forgetDebounced(r)
		}
	}
	if status != store.RunCompleted {
		s.cancelChildren(r, now)
		s.forgetWaits(r)
	}
	if r.rec.Parent != nil {
		s.childEnded(r, now)
	}
}

// failRun fails a running run because step failed permanently: every
// unfinished task is cancelled and the failure handler queued. Callers
// hold s.mu. It reports whether the run was running.
func (s *Store) failRun(r *run, step int, msg string, now time.Time) bool {
	return s.failRunBecause(r, step, msg, "run failed", now)
}

// failRunBecause is failRun with the detail of the cancelled tasks'
// events.
func (s *Store) failRunBecause(r *run, step int, msg, detail string, now time.Time) bool {
	if r.rec.Status != store.RunRunning {
		return false
	}
	r.rec.Failure = &store.RunFailure{StepIndex: step, Error: msg}
	for i, t := range r.tasks {
		if i == r.onFailure || !dag.Cancels(t.rec.Status) {
			continue
		}
		at := s.setStatus(t, store.TaskCancelled, now)
		s.event(r, i, store.EventCancelled, t.rec.Attempt, at, detail)
	}
	s.endRun(r, store.RunFailed, now)
	if r.onFailure >= 0 && r.tasks[r.onFailure].rec.Status == store.TaskPending {
		h := r.tasks[r.onFailure]
		s.event(r, r.onFailure, store.EventQueued, h.rec.Attempt, s.enqueue(h, false, now), "")
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return true
}
