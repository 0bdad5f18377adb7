package bench

import (
	"time"

	"github.com/google/uuid"
)

// taskEvent is an event of the log that hand-off latency needs: a task
// STARTED, or was resolved (COMPLETED or SKIPPED).
type taskEvent struct {
	run      uuid.UUID
	step     int
	resolved bool // COMPLETED or SKIPPED; else STARTED
	at       time.Time
}

// handoffs returns, for every task with parents whose first STARTED event
// falls in [from, to) (any time when to is zero), the time from the
// latest resolution among its parents to that start: the hand-off from a
// parent's completion to its child's start. parents gives each step's
// parents by index. Tasks whose parents were not all resolved are left
// out. events must be grouped by run (as ordering by run does).
func handoffs(events []taskEvent, parents [][]int, from, to time.Time) []time.Duration {
	var out []time.Duration
	n := len(parents)
	resolved := make([]time.Time, n)
	started := make([]time.Time, n)
	flush := func() {
		for step, ps := range parents {
			if len(ps) == 0 || started[step].IsZero() {
				continue
			}
			s := started[step]
			if s.Before(from) || (!to.IsZero() && !s.Before(to)) {
				continue
			}
			var last time.Time
			complete := true
			for _, p := range ps {
				if resolved[p].IsZero() {
					complete = false
					break
				}
				if resolved[p].After(last) {
					last = resolved[p]
				}
			}
			if complete {
				out = append(out, s.Sub(last))
			}
		}
		clear(resolved)
		clear(started)
	}
	for i, ev := range events {
		if i > 0 && ev.run != events[i-1].run {
			flush()
		}
		if ev.step < 0 || ev.step >= n {
			continue
		}
		switch {
		case ev.resolved:
			if ev.at.After(resolved[ev.step]) {
				resolved[ev.step] = ev.at
			}
		case started[ev.step].IsZero() || ev.at.Before(started[ev.step]):
			started[ev.step] = ev.at
		}
	}
	if len(events) > 0 {
		flush()
	}
	return out
}
