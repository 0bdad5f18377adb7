package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Run concurrency limits (store.RunLimit): each key has a line, holding
// the runs that hold one of its slots, oldest first, and the runs
// waiting for one, in the order they came. The Postgres store keeps the
// same in trellis_limits (with the run's key in trellis_runs) and
// trellis_run_waiting.

type runLine struct {
	holders []*run
	waiting []*run
}

// admitRun gives a new run a slot of its key, or applies its strategy
// when there is none: it reports whether the run may queue its roots
// now, and, for a run to cancel at once (cancelNewest), why. Callers
// hold s.mu.
func (s *Store) admitRun(r *run, now time.Time) (let bool, cancel string) {
	limit := r.control.limit
	line := s.runLine(limit.Key)
	if len(line.holders) < limit.Max && len(line.waiting) == 0 {
		s.holdRun(line, r)
		return true, ""
	}
	switch limit.Strategy {
	case store.RunLimitCancelInProgress:
		for len(line.holders) >= limit.Max {
			old := line.holders[0]
			s.cancelRun(old, now, fmt.Sprintf("cancelled by a newer run %s of key %s", r.rec.ID, limit.Key))
			line = s.runLine(limit.Key) // releasing the last slot forgot the line
		}
		s.holdRun(line, r)
		return true, ""
	case store.RunLimitCancelNewest:
		newest := line.holders[len(line.holders)-1]
		return false, fmt.Sprintf("cancelled: key %s has %d runs in progress, its max (the newest: %s)", limit.Key, len(line.holders), newest.rec.ID)
	default:
		line.waiting = append(line.waiting, r)
		r.control.parked = []int{}
		return false, ""
	}
}

// letIn queues the roots of a run that waited (in its key's line, or for
// its debounce window), reporting whether it queued any. Callers hold
// s.mu.
func (s *Store) letIn(r *run, now time.Time) bool {
	parked := r.control.parked
	r.control.parked = nil
	queued := false
	for _, i := range parked {
		t := r.tasks[i]
		if t.rec.Status != store.TaskQueued {
			continue
		}
		s.admit(t, true, now) // QUEUED already: only put on the ready queue, or in its step limit's line
		queued = true
	}
	return queued
}

func (s *Store) holdRun(line *runLine, r *run) {
	line.holders = append(line.holders, r)
	r.control.holds = true
}

func (s *Store) runLine(key string) *runLine {
	line, ok := s.runLines[key]
	if !ok {
		line = &runLine{}
		s.runLines[key] = line
	}
	return line
}

// reopenRun gives a run a retry reopens a slot of its key again, even
// over the key's max (see store.RunLimit). Callers hold s.mu.
func (s *Store) reopenRun(r *run) {
	if c := r.control; c != nil && c.limit.Key != "" && !c.holds {
		s.holdRun(s.runLine(r.control.limit.Key), r)
	}
}

// releaseRun gives back the slot of a run that ended, or takes it out of
// its key's line, and lets the runs waiting longest in for the freed
// slots, queueing their roots. endRun calls it. Callers hold s.mu.
func (s *Store) releaseRun(r *run, now time.Time) {
	c := r.control
	line, ok := s.runLines[c.limit.Key]
	if !ok {
		return
	}
	switch {
	case c.parked != nil:
		line.waiting = slices.DeleteFunc(line.waiting, func(w *run) bool { return w == r })
		c.parked = nil
	case c.holds:
		line.holders = slices.DeleteFunc(line.holders, func(h *run) bool { return h == r })
		c.holds = false
	default:
		return
	}
	for len(line.waiting) > 0 && len(line.holders) < line.waiting[0].control.limit.Max {
		w := line.waiting[0]
		line.waiting = line.waiting[1:]
		s.holdRun(line, w)
		if s.letIn(w, now) {
			s.notify(store.Notification{Kind: store.TasksReady})
		}
	}
	if len(line.holders) == 0 && len(line.waiting) == 0 {
		delete(s.runLines, c.limit.Key)
	}
}

// WaitingRuns implements store.Ops.
func (s *Store) WaitingRuns(_ context.Context) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, line := range s.runLines {
		for _, r := range line.waiting {
			out[r.rec.Workflow]++
		}
	}
	for _, r := range s.debounced {
		out[r.rec.Workflow]++
	}
	return out, nil
}
