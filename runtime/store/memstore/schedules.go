package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

type scheduleKey struct{ workflow, name string }

// PutSchedule implements store.Schedules.
func (s *Store) PutSchedule(_ context.Context, p store.PutSchedule) (store.PutScheduleResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := p.Schedule
	in.Input = append([]byte(nil), in.Input...)
	key := scheduleKey{in.Workflow, in.Name}
	old, ok := s.schedules[key]
	switch {
	case !ok:
		in.Paused = false
		in.CreatedAt, in.UpdatedAt = p.Now, p.Now
		s.schedules[key] = in
		return store.PutScheduleResult{Schedule: copySchedule(in), Created: true}, nil
	case old.SameSettings(in):
		return store.PutScheduleResult{Schedule: copySchedule(old)}, nil
	}
	in.Paused, in.CreatedAt, in.UpdatedAt = old.Paused, old.CreatedAt, p.Now
	s.schedules[key] = in
	return store.PutScheduleResult{Schedule: copySchedule(in), Updated: true}, nil
}

// ListSchedules implements store.Schedules.
func (s *Store) ListSchedules(_ context.Context, q store.ScheduleQuery) ([]store.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.Schedule{}
	for k, sc := range s.schedules {
		if len(q.Workflows) == 0 || slices.Contains(q.Workflows, k.workflow) {
			out = append(out, copySchedule(sc))
		}
	}
	slices.SortFunc(out, func(a, b store.Schedule) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// DeleteSchedule implements store.Schedules.
func (s *Store) DeleteSchedule(_ context.Context, workflow, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := scheduleKey{workflow, name}
	if _, ok := s.schedules[key]; !ok {
		return fmt.Errorf("memory store: deleting schedule %s of %s: %w", name, workflow, store.ErrNotFound)
	}
	delete(s.schedules, key)
	return nil
}

// PauseSchedule implements store.Schedules.
func (s *Store) PauseSchedule(_ context.Context, workflow, name string, paused bool, now time.Time) (store.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := scheduleKey{workflow, name}
	sc, ok := s.schedules[key]
	if !ok {
		return store.Schedule{}, fmt.Errorf("memory store: pausing schedule %s of %s: %w", name, workflow, store.ErrNotFound)
	}
	if sc.Paused != paused {
		sc.Paused, sc.UpdatedAt = paused, now
		s.schedules[key] = sc
	}
	return copySchedule(sc), nil
}

func copySchedule(sc store.Schedule) store.Schedule {
	sc.Input = append([]byte(nil), sc.Input...)
	return sc
}
