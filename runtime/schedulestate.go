package runtime

import (
	"sync"
	"time"
)

// schedules is what an engine knows of the cron schedules of the
// workflows it registered, besides their files' (Definition.schedules):
// the schedules created at run time, as it last read them from the store
// and compiled them (read again every Config.ScheduleRefresh and whenever
// the engine changes one), and the latest tick of each schedule it knows
// started. The cronScheduler holds it and fires them (schedules.go); the
// engine's schedule API marks it changed (apischedules.go).
type schedules struct {
	refresh time.Duration // Config.ScheduleRefresh
	changed chan struct{} // wakes the schedule loop after a change; capacity 1

	mu       sync.Mutex
	ticks    map[string]time.Time  // latest tick known started, by workflow/schedule
	stored   map[string][]schedule // by workflow: the active (not paused) stored schedules that compiled
	loadedAt time.Time             // by the engine's clock; zero: never read
	stale    bool                  // this engine changed a schedule since
	warned   map[string]time.Time  // workflow/name -> UpdatedAt of the version warned about
}

func newSchedules(refresh time.Duration) *schedules {
	return &schedules{
		refresh: refresh,
		changed: make(chan struct{}, 1),
		ticks:   map[string]time.Time{},
		warned:  map[string]time.Time{},
	}
}

// of returns the schedules of the registered workflows regs: each one's
// file's, then those created at run time as last read.
func (s *schedules) of(regs []*registration) []scheduled {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]scheduled, len(regs))
	for i, r := range regs {
		out[i] = scheduled{reg: r, schedules: append(append([]schedule(nil), r.def.schedules...), s.stored[r.def.Name()]...)}
	}
	return out
}

// lastTick returns the latest tick of a schedule (workflow/schedule)
// known started, zero when none is; started records one.
func (s *schedules) lastTick(id string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ticks[id]
}

func (s *schedules) started(id string, tick time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks[id] = tick
}

// markChanged makes the next firing read the stored schedules again, and
// wakes the schedule loop.
func (s *schedules) markChanged() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// untilRefresh is how long after now the stored schedules are due to be
// read again.
func (s *schedules) untilRefresh(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.loadedAt.Add(s.refresh).Sub(now), time.Millisecond)
}

// refreshDue reports whether the stored schedules are due to be read at
// now: never read, changed by this engine, or read Config.ScheduleRefresh
// ago. It clears the change: a failed read calls markChanged again.
func (s *schedules) refreshDue(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := s.loadedAt.IsZero() || s.stale || !now.Before(s.loadedAt.Add(s.refresh))
	s.stale = false
	return due
}

// loaded keeps the stored schedules read and compiled at now.
func (s *schedules) loaded(stored map[string][]schedule, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored, s.loadedAt = stored, now
}

// firstWarning reports whether a stored schedule (workflow/name) that is
// not fired has not been warned about at this version (its UpdatedAt),
// and remembers that it now has.
func (s *schedules) firstWarning(id string, updatedAt time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.warned[id]
	s.warned[id] = updatedAt
	return !ok || !seen.Equal(updatedAt)
}
