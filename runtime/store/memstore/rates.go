package memstore

import (
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Rate limits (store.Rate): each key has a pace, the generic cell rate
// algorithm's theoretical arrival time. The Postgres store keeps the same
// in trellis_rates, and decides in trellis_pace, which its claims call.

// pace decides whether a claimed task may start at now (see store.Rate):
// a task queued for its turn starts; any other takes its key's next turn
// and starts when that is now. When it is later, the task is put off: it
// stays QUEUED, off the ready queue, with a timer for its turn. Callers
// hold s.mu.
func (s *Store) pace(t *task, now time.Time) bool {
	if t.rate.Key == "" {
		return true
	}
	if t.turn {
		t.turn = false
		return true
	}
	now = later(now, t.rec.UpdatedAt) // as a claim stamps it
	every := t.rate.Interval
	tolerance := time.Duration(t.rate.Burst-1) * every
	due, ok := s.rates[t.rate.Key]
	if !ok {
		due = now
	}
	due = later(due, now).Add(every)
	s.rates[t.rate.Key] = due
	turn := later(now, due.Add(-every-tolerance))
	if !turn.After(now) {
		return true
	}
	t.paced = true
	s.timers.push(t, turn)
	s.notify(store.Notification{Kind: store.TimerSet})
	return false
}

// pacedTasks are the tasks put off by their rate limit, QUEUED until
// their timer (their turn) fires. Callers hold s.mu.
func (s *Store) pacedTasks() []*task {
	var out []*task
	for _, tm := range s.timers.timers {
		if t := tm.task; tm.gen == t.gen && t.paced && t.rec.Status == store.TaskQueued {
			out = append(out, t)
		}
	}
	return out
}

// forgetRates drops the paces of keys at rest (Maintain): a key due
// before now behaves as a key without a pace. Callers hold s.mu.
func (s *Store) forgetRates(now time.Time) {
	for key, due := range s.rates {
		if due.Before(now) {
			delete(s.rates, key)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
