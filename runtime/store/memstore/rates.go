package memstore

import (
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Rate limits (store.Rate): each key has a pace, the generic cell rate
// algorithm's theoretical arrival time, and the end of its line of tasks
// put off. The Postgres store keeps the same in trellis_rates and
// trellis_paced, and decides in the trigger trellis_pace.

type pace struct {
	// tat is when the key's next start is due at its rate; a start may
	// come (Burst-1) intervals before it. The zero time is long past.
	tat time.Time
	// line is the turn after the last task put off: a task new to the
	// key while line is ahead of the clock joins the line.
	line time.Time
}

// pace decides whether a claimed task may start at now (see store.Rate).
// When it may not, it puts the task off: it stays QUEUED, off the ready
// queue, with a timer for its turn. Callers hold s.mu.
func (s *Store) pace(t *task, now time.Time) bool {
	if t.rate.Key == "" {
		return true
	}
	now = later(now, t.rec.UpdatedAt) // as a claim stamps it
	p, ok := s.rates[t.rate.Key]
	if !ok {
		p = &pace{}
		s.rates[t.rate.Key] = p
	}
	every := t.rate.Interval
	tolerance := time.Duration(t.rate.Burst-1) * every
	turn := t.paced || !p.line.After(now)
	t.paced = false
	if turn && !p.tat.Add(-tolerance).After(now) {
		p.tat = later(p.tat, now).Add(every)
		return true
	}
	slot := later(later(p.line, now), p.tat.Add(-tolerance))
	p.line = slot.Add(every)
	t.paced = true
	s.timers.push(t, slot)
	s.notify(store.Notification{Kind: store.TimerSet})
	return false
}

// forgetRates drops the paces of keys at rest (Maintain): a pace whose
// due time and line are both past behaves as a new one. Callers hold
// s.mu.
func (s *Store) forgetRates(now time.Time) {
	for key, p := range s.rates {
		if p.tat.Before(now) && p.line.Before(now) {
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
