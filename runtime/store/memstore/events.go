package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// sent is a stored event (see store's Events).
type sent struct {
	seq     int64
	name    string
	run     uuid.UUID // for an event sent to a run
	key     string    // for an event sent with a key
	id      string    // its ID, if any (see store.NewEvent)
	at      time.Time
	payload []byte
}

// keyAddr addresses the waits with a key in runs of one workflow and
// tenant.
type keyAddr struct{ workflow, tenant, name, key string }

// sentID names an event sent with a key and an ID: a second one is a
// repeat (see store.NewEvent).
type sentID struct{ workflow, tenant, name, id string }

// awaiting is what a WAITING wait task waits for.
type awaiting struct {
	task  *task
	addr  keyAddr // its key, when keyed
	keyed bool
}

// SendEvents implements store.Events.
func (s *Store) SendEvents(_ context.Context, p store.SendEvents) ([]store.SentEvent, error) {
	if p.Tx != nil {
		return nil, store.ErrTxUnsupported
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range p.Events {
		if ev.Run == uuid.Nil {
			continue
		}
		if r, ok := s.runs[ev.Run]; !ok || r.rec.Workflow != ev.Workflow {
			return nil, fmt.Errorf("memstore: sending event %s to run %s of %s: %w", ev.Name, ev.Run, ev.Workflow, store.ErrNotFound)
		}
	}
	out := make([]store.SentEvent, len(p.Events))
	for i, ev := range p.Events {
		s.eventSeq++
		e := &sent{seq: s.eventSeq, name: ev.Name, run: ev.Run, key: ev.Key, at: p.Now, payload: append([]byte(nil), ev.Payload...)}
		var waits []*task
		if ev.Run != uuid.Nil {
			s.byRun[ev.Run] = append(s.byRun[ev.Run], e)
			for _, t := range s.runs[ev.Run].tasks {
				if w, ok := s.waits[t.rec.Key]; ok && t.waitEvent == ev.Name {
					waits = append(waits, w.task)
				}
			}
		} else {
			if ev.ID != "" {
				id := sentID{workflow: ev.Workflow, tenant: ev.Tenant, name: ev.Name, id: ev.ID}
				if s.sentIDs[id] {
					out[i].Repeat = true
					continue
				}
				s.sentIDs[id] = true
				e.id = ev.ID
			}
			addr := keyAddr{workflow: ev.Workflow, tenant: ev.Tenant, name: ev.Name, key: ev.Key}
			s.byKey[addr] = append(s.byKey[addr], e)
			for _, w := range s.keyWaits[addr] {
				if !w.task.run.rec.CreatedAt.After(p.Now) {
					waits = append(waits, w.task)
				}
			}
			slices.SortFunc(waits, func(a, b *task) int { return compareKeys(a.rec.Key, b.rec.Key) })
		}
		for _, t := range waits {
			s.deliver(t, e, p.Now)
		}
		out[i].Woken = len(waits)
	}
	s.notify(store.Notification{Kind: store.TasksReady})
	return out, nil
}

// await applies an Await: the task waits for its event, or is woken at
// once with the first one sent already. Callers hold s.mu; it reports
// whether it queued the task.
func (s *Store) await(a store.Await, now time.Time) (queued bool, stale bool) {
	t, ok := s.owned(a.Attempt)
	if !ok {
		return false, true
	}
	at := s.setStatus(t, store.TaskWaiting, now)
	s.event(t.run, a.Key.Step, store.EventWaiting, a.Attempt.Attempt, at, "waiting for event "+a.Event)
	t.waitEvent = a.Event
	w := &awaiting{task: t, keyed: a.Keyed}
	if a.Keyed {
		w.addr = keyAddr{workflow: t.run.rec.Workflow, tenant: t.run.rec.Tenant, name: a.Event, key: a.EventKey}
	}
	if e := s.firstEvent(w); e != nil {
		s.deliver(t, e, at)
		return true, false
	}
	s.waits[t.rec.Key] = w
	if w.keyed {
		if s.keyWaits[w.addr] == nil {
			s.keyWaits[w.addr] = map[store.TaskKey]*awaiting{}
		}
		s.keyWaits[w.addr][t.rec.Key] = w
	}
	if !a.Deadline.IsZero() {
		s.timers.push(t, a.Deadline)
	}
	return false, false
}

// firstEvent returns the first event a wait is for: sent to its run, or
// with its key since its run was created.
func (s *Store) firstEvent(w *awaiting) *sent {
	var first *sent
	for _, e := range s.byRun[w.task.run.rec.ID] {
		if e.name == w.task.waitEvent {
			first = e
			break
		}
	}
	if !w.keyed {
		return first
	}
	for _, e := range s.byKey[w.addr] {
		if e.at.Before(w.task.run.rec.CreatedAt) {
			continue
		}
		if first == nil || e.seq < first.seq {
			first = e
		}
		break
	}
	return first
}

// forget drops a task's wait registration, if any. Callers hold s.mu.
func (s *Store) forget(key store.TaskKey) {
	w, ok := s.waits[key]
	if !ok {
		return
	}
	delete(s.waits, key)
	if w.keyed {
		delete(s.keyWaits[w.addr], key)
		if len(s.keyWaits[w.addr]) == 0 {
			delete(s.keyWaits, w.addr)
		}
	}
}

// deliver wakes a waiting task with an event's payload as its output.
// Callers hold s.mu.
func (s *Store) deliver(t *task, e *sent, now time.Time) {
	s.forget(t.rec.Key)
	t.rec.Output = append([]byte(nil), e.payload...)
	s.wakeParent(t, now, "event "+e.name+" received")
}

// wakeWait wakes a waiting task whose deadline passed, with no output.
// Callers hold s.mu.
func (s *Store) wakeWait(t *task, now time.Time) {
	s.forget(t.rec.Key)
	s.wakeParent(t, now, "timed out")
}

// forgetWaits drops the waits of a run that ended. Callers hold s.mu.
func (s *Store) forgetWaits(r *run) {
	for _, t := range r.tasks {
		s.forget(t.rec.Key)
	}
}

func compareKeys(a, b store.TaskKey) int {
	if c := compareUUID(a.Run, b.Run); c != 0 {
		return c
	}
	return a.Step - b.Step
}

// PurgeEvents implements store.Retention.
func (s *Store) PurgeEvents(_ context.Context, sentBefore time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Oldest first across addresses: gather, sort by sending order.
	var old []*sent
	for _, list := range s.byKey {
		for _, e := range list {
			if e.at.Before(sentBefore) {
				old = append(old, e)
			}
		}
	}
	slices.SortFunc(old, func(a, b *sent) int { return int(a.seq - b.seq) })
	if limit > 0 && len(old) > limit {
		old = old[:limit]
	}
	gone := make(map[*sent]bool, len(old))
	for _, e := range old {
		gone[e] = true
	}
	for addr, list := range s.byKey {
		list = slices.DeleteFunc(list, func(e *sent) bool {
			if gone[e] && e.id != "" {
				delete(s.sentIDs, sentID{workflow: addr.workflow, tenant: addr.tenant, name: addr.name, id: e.id})
			}
			return gone[e]
		})
		if len(list) == 0 {
			delete(s.byKey, addr)
		} else {
			s.byKey[addr] = list
		}
	}
	return len(old), nil
}
