package memstore

import (
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Concurrency limits (store.Limit): each key has a line, holding how many
// tasks hold one of its slots and, in order, the tasks waiting for one.
// The Postgres store keeps the same in trellis_limits and
// trellis_waiting.

type limitLine struct {
	held int
	// waiting are the tasks in line, oldest first; a task that stopped
	// waiting (its run was cancelled) is dropped when it reaches the
	// front.
	waiting []*task
}

// admit queues a task that becomes ready for the first time (a root of a
// new run, a child whose parents resolved, a step of a retried run): when
// it has a limit, it takes a slot of its key, or waits in the key's line,
// QUEUED but not on the ready queue, when there is none. fresh says the
// task is a root of a new run (its run's new lane). It returns the time
// the task was queued at. Callers hold s.mu.
func (s *Store) admit(t *task, fresh bool, now time.Time) time.Time {
	if t.limit.Key == "" || t.holds {
		return s.queueIn(t, fresh, now)
	}
	line := s.line(t.limit.Key)
	if line.held < t.limit.Max {
		line.held++
		t.holds = true
		return s.queueIn(t, fresh, now)
	}
	at := s.setStatus(t, store.TaskQueued, now)
	t.waiting, t.fresh = true, fresh
	line.waiting = append(line.waiting, t)
	return at
}

func (s *Store) queueIn(t *task, fresh bool, now time.Time) time.Time {
	if fresh {
		return s.enqueueNew(t, now)
	}
	return s.enqueue(t, false, now)
}

func (s *Store) line(key string) *limitLine {
	line, ok := s.limits[key]
	if !ok {
		line = &limitLine{}
		s.limits[key] = line
	}
	return line
}

// release gives back the slot of a task that ended, or takes it out of
// its key's line, and hands freed slots to the tasks waiting longest.
// setStatus calls it. Callers hold s.mu.
func (s *Store) release(t *task) {
	line, ok := s.limits[t.limit.Key]
	if !ok {
		return
	}
	switch {
	case t.waiting:
		t.waiting = false
	case t.holds:
		t.holds = false
		line.held--
	default:
		return
	}
	for len(line.waiting) > 0 {
		w := line.waiting[0]
		if !w.waiting {
			line.waiting = line.waiting[1:]
			continue
		}
		if line.held >= w.limit.Max {
			break
		}
		line.waiting = line.waiting[1:]
		line.held++
		w.waiting, w.holds = false, true
		s.queue.push(w, false, store.Lane(w.run.rec.Priority, !w.fresh))
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	if line.held == 0 && len(line.waiting) == 0 {
		delete(s.limits, t.limit.Key)
	}
}
