package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// FireTimers implements store.Timers.
func (s *Store) FireTimers(_ context.Context, now time.Time, limit int) ([]store.FiredTimer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fired []store.FiredTimer
	for limit <= 0 || len(fired) < limit {
		tm, ok := s.timers.next()
		if !ok || tm.at.After(now) {
			break
		}
		s.timers.pop()
		t := tm.task
		sleep := t.rec.Status == store.TaskSleeping
		ft := store.FiredTimer{Key: t.rec.Key, Sleep: sleep, Due: tm.at,
			Workflow: t.run.rec.Workflow, Version: t.run.rec.Version, Tenant: t.run.rec.Tenant}
		switch t.rec.Status {
		case store.TaskSleeping:
			if t.rec.Kind != store.KindSleep {
				s.event(t.run, t.rec.Key.Step, store.EventWoken, t.rec.Attempt, s.enqueue(t, true, now), "")
				break
			}
			// A sleep step completes here, as Finish would complete it.
			at := s.setStatus(t, store.TaskRunning, now)
			s.event(t.run, t.rec.Key.Step, store.EventWoken, t.rec.Attempt, at, "")
			var res store.FinishResult
			c := store.Completion{Attempt: store.Attempt{Key: t.rec.Key, Attempt: t.rec.Attempt}, Woken: true, Children: s.childrenOf(t)}
			s.complete(t, c, nil, now, &res)
			ft.Completed, ft.RunFinished = true, len(res.Finished) > 0
		case store.TaskRetrying:
			t.rec.WakeAt = time.Time{} // queued for a new attempt, not woken
			s.event(t.run, t.rec.Key.Step, store.EventQueued, t.rec.Attempt, s.enqueue(t, false, now), "")
		case store.TaskWaiting:
			s.wakeWait(t, now) // its deadline passed first
		case store.TaskQueued:
			if !t.paced {
				continue
			}
			t.paced, t.turn = false, true
			s.enqueue(t, false, now) // put off by its rate limit: its turn came
		default:
			continue
		}
		fired = append(fired, ft)
	}
	if s.fireDebounced(now) || len(fired) > 0 {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return fired, nil
}

// NextTimer implements store.Timers.
func (s *Store) NextTimer(_ context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, ok := s.nextRunTimer()
	if tm, queued := s.timers.next(); queued && (!ok || tm.at.Before(next)) {
		next, ok = tm.at, true
	}
	if due, any := s.nextDebounced(); any && (!ok || due.Before(next)) {
		next, ok = due, true
	}
	return next, ok, nil
}

// childrenOf returns the steps of t's run that name t among their parents.
func (s *Store) childrenOf(t *task) []int {
	var out []int
	for _, c := range t.run.tasks {
		if slices.Contains(c.parents, t.rec.Key.Step) {
			out = append(out, c.rec.Key.Step)
		}
	}
	return out
}
