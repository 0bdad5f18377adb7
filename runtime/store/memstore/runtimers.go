package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// runTimer is a run's one pending timer: its delayed start, or its
// deadline.
type runTimer struct {
	run   *run
	at    time.Time
	start bool
}

// setRunTimers gives a new run its start or deadline timer, if any.
// Callers hold s.mu.
func (s *Store) setRunTimers(r *run, nr store.NewRun, now time.Time) {
	r.timeout = nr.Timeout
	switch {
	case nr.StartAt.After(now):
		r.rec.StartAt = nr.StartAt
		s.runTimers[r.rec.ID] = &runTimer{run: r, at: nr.StartAt, start: true}
	case nr.Timeout > 0:
		s.setDeadline(r, now)
	default:
		return
	}
	s.notify(store.Notification{Kind: store.TimerSet})
}

// setDeadline sets the deadline of a run starting at now. Callers hold
// s.mu.
func (s *Store) setDeadline(r *run, now time.Time) {
	r.rec.Deadline = now.Add(r.timeout)
	s.runTimers[r.rec.ID] = &runTimer{run: r, at: r.rec.Deadline}
}

// FireRunTimers implements store.Timers.
func (s *Store) FireRunTimers(_ context.Context, now time.Time, limit int) ([]store.FiredRunTimer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fired []store.FiredRunTimer
	queued := false
	for n, tm := range s.dueRunTimers(now) {
		if limit > 0 && n >= limit {
			break
		}
		r := tm.run
		delete(s.runTimers, r.rec.ID)
		if r.rec.Status != store.RunRunning {
			continue // it ended first
		}
		ft := store.FiredRunTimer{ID: r.rec.ID, Workflow: r.rec.Workflow, Tenant: r.rec.Tenant, Started: tm.start, Due: tm.at}
		if tm.start {
			if !s.startRun(r, now) {
				continue
			}
			queued = true
		} else {
			s.failRunBecause(r, -1, store.DeadlineError(r.timeout), store.DeadlineDetail, now)
		}
		fired = append(fired, ft)
	}
	if queued {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return fired, nil
}

// startRun queues the roots of a delayed run and sets its deadline,
// reporting whether it started it. Callers hold s.mu.
func (s *Store) startRun(r *run, now time.Time) bool {
	if !s.queueRoots(r, now, "run started") {
		return false // cancelled before its start, then retried: started then
	}
	if r.timeout > 0 {
		s.setDeadline(r, now)
	}
	return true
}

// dueRunTimers returns the run timers due at now, earliest first.
// Callers hold s.mu.
func (s *Store) dueRunTimers(now time.Time) []*runTimer {
	var due []*runTimer
	for _, tm := range s.runTimers {
		if !tm.at.After(now) {
			due = append(due, tm)
		}
	}
	slices.SortFunc(due, func(a, b *runTimer) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return bytes.Compare(a.run.rec.ID[:], b.run.rec.ID[:])
	})
	return due
}

// nextRunTimer returns when the earliest run timer is due. Callers hold
// s.mu.
func (s *Store) nextRunTimer() (time.Time, bool) {
	var next time.Time
	for _, tm := range s.runTimers {
		if next.IsZero() || tm.at.Before(next) {
			next = tm.at
		}
	}
	return next, !next.IsZero()
}

// forgetRunTimer drops a purged run's timer. Callers hold s.mu.
func (s *Store) forgetRunTimer(id uuid.UUID) { delete(s.runTimers, id) }
