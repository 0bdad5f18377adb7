package memstore

import (
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Debounce (store.Debounce): each key has at most one run waiting for its
// window, in s.debounced. The Postgres store keeps the same in
// trellis_run_waiting, with the time each run is due.

// debounceRun makes a new run the one its key waits for, cancelling the
// run that waited before it, and sets when it is due. Its roots are
// parked by the caller. Callers hold s.mu.
func (s *Store) debounceRun(r *run, now time.Time) {
	c := r.control
	key := c.debounce.Key
	c.since = now
	if prev, ok := s.debounced[key]; ok {
		c.since = prev.control.since
		s.cancelRun(prev, now, fmt.Sprintf("superseded by a newer run %s of debounce key %s", r.rec.ID, key))
	}
	c.due = now.Add(c.debounce.Window)
	if mw := c.debounce.MaxWait; mw > 0 && c.since.Add(mw).Before(c.due) {
		c.due = c.since.Add(mw)
	}
	c.parked = []int{}
	s.debounced[key] = r
	s.notify(store.Notification{Kind: store.TimerSet})
}

// forgetDebounced takes a run that ended while it waited for its window
// off its key. endRun calls it. Callers hold s.mu.
func (s *Store) forgetDebounced(r *run) {
	if s.debounced[r.control.debounce.Key] == r {
		delete(s.debounced, r.control.debounce.Key)
	}
	r.control.due, r.control.parked = time.Time{}, nil
}

// fireDebounced lets in the runs whose window passed at now, earliest
// first, and reports whether it queued any task. Callers hold s.mu.
func (s *Store) fireDebounced(now time.Time) bool {
	var due []*run
	for _, r := range s.debounced {
		if !r.control.due.After(now) {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, func(a, b *run) int { return a.control.due.Compare(b.control.due) })
	queued := false
	for _, r := range due {
		delete(s.debounced, r.control.debounce.Key)
		r.control.due = time.Time{}
		if s.letIn(r, now) {
			queued = true
		}
	}
	return queued
}

// nextDebounced is when the next run waiting for its window is due.
// Callers hold s.mu.
func (s *Store) nextDebounced() (time.Time, bool) {
	var next time.Time
	for _, r := range s.debounced {
		if next.IsZero() || r.control.due.Before(next) {
			next = r.control.due
		}
	}
	return next, !next.IsZero()
}
