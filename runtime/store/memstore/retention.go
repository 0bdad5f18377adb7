package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/effectivelabs/trellis/runtime/store"
)

// PurgeRuns implements store.Retention by looking at every run: the
// memory store holds few enough. Under the store's lock, the runs of a
// call go at once.
func (s *Store) PurgeRuns(_ context.Context, p store.Purge) (store.PurgeResult, error) {
	if err := p.Check(); err != nil {
		return store.PurgeResult{}, fmt.Errorf("memory store: purging runs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var picked []*run
	for _, r := range s.runs {
		if purgeable(r, p) {
			picked = append(picked, r)
		}
	}
	if p.DryRun {
		return store.PurgeResult{Runs: len(picked)}, nil
	}
	slices.SortFunc(picked, func(a, b *run) int {
		if c := a.rec.FinishedAt.Compare(b.rec.FinishedAt); c != 0 {
			return c
		}
		return compareUUID(a.rec.ID, b.rec.ID)
	})
	if p.Limit > 0 && len(picked) > p.Limit {
		picked = picked[:p.Limit]
	}
	for _, r := range picked {
		delete(s.runs, r.rec.ID)
		s.forgetRunTimer(r.rec.ID)
		delete(s.byRun, r.rec.ID) // the events sent to it
		s.forgetWaits(r)
		for _, t := range r.tasks {
			delete(s.children, t.rec.Key)
		}
		key := idemKey{r.rec.Workflow, r.rec.Tenant, r.rec.IdempotencyKey}
		if r.rec.IdempotencyKey != "" && s.idem[key] == r.rec.ID {
			delete(s.idem, key)
		}
	}
	return store.PurgeResult{Runs: len(picked)}, nil
}

// purgeable reports whether p selects r and r holds no live work (see
// store.Retention). Its tasks are in no queue and on no timer that
// counts: the entries of tasks that moved on are void (see task.gen).
// Callers hold s.mu.
func purgeable(r *run, p store.Purge) bool {
	switch {
	case r.rec.Status != p.Status,
		r.rec.FinishedAt.IsZero() || !r.rec.FinishedAt.Before(p.FinishedBefore),
		p.Workflow != "" && r.rec.Workflow != p.Workflow,
		p.Tenant != "" && r.rec.Tenant != p.Tenant,
		!store.HasTags(r.rec.Tags, p.Tags):
		return false
	}
	for _, t := range r.tasks {
		switch t.rec.Status {
		case store.TaskQueued, store.TaskRunning, store.TaskSleeping, store.TaskRetrying:
			return false
		case store.TaskPending:
			if r.rec.Status != store.RunCompleted {
				return false
			}
		}
	}
	return true
}
