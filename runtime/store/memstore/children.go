package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// spawn applies a Spawn: the task waits for the runs it creates. Callers
// hold s.mu; it reports whether it queued anything.
func (s *Store) spawn(sp store.Spawn, now time.Time) (queued bool, stale bool) {
	t, ok := s.owned(sp.Attempt)
	if !ok {
		return false, true
	}
	at := s.setStatus(t, store.TaskWaiting, now)
	t.awaiting = len(sp.Runs)
	s.event(t.run, sp.Key.Step, store.EventWaiting, sp.Attempt.Attempt, at, waitingDetail(len(sp.Runs)))
	for i := range sp.Runs {
		nr := sp.Child(i)
		if _, earlier := s.runs[nr.ID]; earlier {
			continue
		}
		if s.createRun(nr, at) {
			queued = true
		}
	}
	if len(sp.Runs) == 0 {
		s.wakeParent(t, at, "no runs to wait for")
		queued = true
	} else if !sp.Deadline.IsZero() {
		s.timers.push(t, sp.Deadline)
	}
	return queued, false
}

func waitingDetail(n int) string {
	if n == 1 {
		return "waiting for 1 child run"
	}
	return fmt.Sprintf("waiting for %d child runs", n)
}

// childEnded counts a child run's end against its parent task's wait, and
// queues the parent when the wait is over. Callers hold s.mu.
func (s *Store) childEnded(r *run, now time.Time) {
	parent, ok := s.lookup(r.rec.Parent.Task())
	if !ok || parent.rec.Status != store.TaskWaiting {
		return
	}
	parent.awaiting--
	switch {
	case r.rec.Status != store.RunCompleted:
		s.wakeParent(parent, now, fmt.Sprintf("child run %s (index %d) ended %s", r.rec.ID, r.rec.Parent.Index, r.rec.Status))
	case parent.awaiting <= 0:
		s.wakeParent(parent, now, "every child run completed")
	default:
		return
	}
	s.notify(store.Notification{Kind: store.TasksReady})
}

// wakeParent queues a waiting task, woken. Callers hold s.mu.
func (s *Store) wakeParent(t *task, now time.Time, detail string) {
	t.rec.WakeAt = later(now, t.rec.UpdatedAt)
	s.event(t.run, t.rec.Key.Step, store.EventWoken, t.rec.Attempt, s.enqueue(t, true, now), detail)
}

// cancelChildren cancels the running child runs of a run that ended
// otherwise than completed, and theirs. Callers hold s.mu.
func (s *Store) cancelChildren(r *run, now time.Time) {
	detail := "parent run " + string(r.rec.Status)
	for _, t := range r.tasks {
		for _, child := range s.children[t.rec.Key] {
			if child.rec.Status == store.RunRunning {
				s.cancelRun(child, now, detail)
			}
		}
	}
}

// ChildRuns implements store.Runs.
func (s *Store) ChildRuns(_ context.Context, parent store.TaskKey) ([]store.RunWithTasks, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[parent.Run]; !ok {
		return nil, fmt.Errorf("run %s: %w", parent.Run, store.ErrNotFound)
	}
	kids := slices.Clone(s.children[parent])
	slices.SortStableFunc(kids, func(a, b *run) int {
		if a.rec.Parent.Index != b.rec.Parent.Index {
			return a.rec.Parent.Index - b.rec.Parent.Index
		}
		return a.rec.CreatedAt.Compare(b.rec.CreatedAt)
	})
	out := make([]store.RunWithTasks, len(kids))
	for i, r := range kids {
		out[i] = store.RunWithTasks{Run: r.row(), Tasks: r.taskRecords()}
	}
	return out, nil
}
