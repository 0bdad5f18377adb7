package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/dag"
	"github.com/effectivelabs/trellis/runtime/store"
)

// ClaimTasks implements store.Tasks.
func (s *Store) ClaimTasks(_ context.Context, p store.Claim) ([]store.ClaimedTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	claimedPerTenant := map[string]int{}
	entries := s.queue.claim(p.Limit, func(e *entry) bool {
		r := e.task.run
		if len(p.Workflows) > 0 && !slices.Contains(p.Workflows, r.rec.Workflow) {
			return false
		}
		if p.TenantLimit > 0 {
			tenant := r.rec.Tenant
			if s.queue.tenant(tenant).running+claimedPerTenant[tenant] >= p.TenantLimit {
				return false
			}
			claimedPerTenant[tenant]++
		}
		return true
	})
	out := make([]store.ClaimedTask, 0, len(entries))
	for _, e := range entries {
		t, r := e.task, e.task.run
		s.setStatus(t, dag.TaskRunning, p.Now)
		t.rec.Worker = p.Worker
		t.claimedAt = p.Now
		if !e.wake {
			t.rec.Attempt++
		}
		plain := t.plain && !e.wake
		if plain {
			s.event(r, t.rec.Key.Step, dag.EventStarted, t.rec.Attempt, p.Now, "")
		}
		var parents []store.ParentOutput
		for _, p := range t.parents {
			pt := r.tasks[p]
			parents = append(parents, store.ParentOutput{Step: p, Status: pt.rec.Status, Output: pt.rec.Output})
		}
		out = append(out, store.ClaimedTask{
			Key: t.rec.Key, Kind: t.rec.Kind, Attempt: t.rec.Attempt, PriorAttempts: t.prior,
			Woken: e.wake, Plain: plain, Workflow: r.rec.Workflow, Version: r.rec.Version,
			Tenant: r.rec.Tenant, Input: r.rec.Input, FailedStep: r.rec.FailedStep, Error: r.rec.Error,
			Parents: parents,
		})
	}
	return out, nil
}

// owned returns the task if it is running in the given attempt.
func (s *Store) owned(a store.Attempt) (*task, bool) {
	t, ok := s.lookup(a.Key)
	if !ok || t.rec.Status != dag.TaskRunning || t.rec.Attempt != a.Attempt {
		return nil, false
	}
	return t, true
}

// StartTasks implements store.Tasks.
func (s *Store) StartTasks(_ context.Context, tasks []store.Attempt, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range tasks {
		if t, ok := s.owned(a); ok {
			s.event(t.run, a.Key.Step, dag.EventStarted, a.Attempt, now, "")
		}
	}
	return nil
}

// Finish implements store.Tasks.
func (s *Store) Finish(_ context.Context, r store.Results) (store.FinishResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res store.FinishResult
	queued := false
	for _, c := range r.Completions {
		t, ok := s.owned(c.Attempt)
		if !ok {
			res.Stale = append(res.Stale, c.Attempt)
			continue
		}
		run := t.run
		status, typ := dag.TaskCompleted, dag.EventCompleted
		if c.Skipped {
			status, typ = dag.TaskSkipped, dag.EventSkipped
		}
		s.setStatus(t, status, r.Now)
		t.rec.Output = append([]byte(nil), c.Output...)
		s.event(run, c.Key.Step, typ, c.Attempt.Attempt, r.Now, c.Detail)
		for _, child := range dag.Resolve(run.pending, c.Children) {
			if ct := run.tasks[child]; ct.rec.Status == dag.TaskPending && run.rec.Status == dag.RunRunning {
				s.enqueue(ct, false, r.Now)
				s.event(run, child, dag.EventQueued, ct.rec.Attempt, r.Now, "")
				queued = true
			}
		}
		if run.unresolved == 0 && run.rec.Status == dag.RunRunning {
			s.endRun(run, dag.RunCompleted, r.Now)
			res.Finished = append(res.Finished, run.rec.ID)
		}
	}
	for _, rt := range r.Retries {
		t, ok := s.owned(rt.Attempt)
		if !ok {
			res.Stale = append(res.Stale, rt.Attempt)
			continue
		}
		if rt.TimedOut {
			s.event(t.run, rt.Key.Step, dag.EventTimedOut, rt.Attempt.Attempt, r.Now, rt.Error)
		}
		s.setStatus(t, dag.TaskRetrying, r.Now)
		t.rec.Error, t.rec.WakeAt = rt.Error, rt.At
		s.timers.push(t, rt.At)
		s.event(t.run, rt.Key.Step, dag.EventRetrying, rt.Attempt.Attempt, r.Now, rt.Error)
	}
	for _, f := range r.Failures {
		t, ok := s.owned(f.Attempt)
		if !ok {
			res.Stale = append(res.Stale, f.Attempt)
			continue
		}
		if f.TimedOut {
			s.event(t.run, f.Key.Step, dag.EventTimedOut, f.Attempt.Attempt, r.Now, f.Error)
		}
		s.setStatus(t, dag.TaskFailed, r.Now)
		t.rec.Error = f.Error
		s.event(t.run, f.Key.Step, dag.EventFailed, f.Attempt.Attempt, r.Now, f.Error)
		if t.rec.Kind != dag.KindOnFailure && s.failRun(t.run, f.Key.Step, f.Error, r.Now) {
			res.Finished = append(res.Finished, t.run.rec.ID)
		}
	}
	for _, sl := range r.Sleeps {
		t, ok := s.owned(sl.Attempt)
		if !ok {
			res.Stale = append(res.Stale, sl.Attempt)
			continue
		}
		s.setStatus(t, dag.TaskSleeping, r.Now)
		t.rec.WakeAt = sl.Until
		s.timers.push(t, sl.Until)
		s.event(t.run, sl.Key.Step, dag.EventSleeping, sl.Attempt.Attempt, r.Now, "until "+sl.Until.UTC().Format(time.RFC3339Nano))
	}
	if queued {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return res, nil
}

// Heartbeat implements store.Tasks.
func (s *Store) Heartbeat(_ context.Context, worker string, tasks []store.Attempt, now time.Time) ([]store.Attempt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers[worker] = now
	var lost []store.Attempt
	for _, a := range tasks {
		if t, ok := s.owned(a); !ok || t.rec.Worker != worker {
			lost = append(lost, a)
		}
	}
	return lost, nil
}

// RecoverTasks implements store.Tasks.
func (s *Store) RecoverTasks(_ context.Context, p store.Recover) (store.RecoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var stale []*task
	for _, t := range s.running {
		if t.claimedAt.Before(p.StaleBefore) && s.workers[t.rec.Worker].Before(p.StaleBefore) {
			stale = append(stale, t)
		}
	}
	// Oldest claim first, then by key, so recovery order is stable.
	slices.SortFunc(stale, func(a, b *task) int {
		if c := a.claimedAt.Compare(b.claimedAt); c != 0 {
			return c
		}
		if c := compareUUID(a.rec.Key.Run, b.rec.Key.Run); c != 0 {
			return c
		}
		return a.rec.Key.Step - b.rec.Key.Step
	})
	if p.Limit > 0 && len(stale) > p.Limit {
		stale = stale[:p.Limit]
	}
	var res store.RecoverResult
	queued := false
	for _, t := range stale {
		a := store.Attempt{Key: t.rec.Key, Attempt: t.rec.Attempt}
		detail := "worker " + t.rec.Worker + " stopped heartbeating"
		// A sleep step runs no code, so losing its worker costs no attempt;
		// once woken (it has a wake time) it goes back to be completed.
		if t.rec.Kind == dag.KindSleep || t.rec.Attempt-t.prior < t.maxAttempts {
			s.event(t.run, t.rec.Key.Step, dag.EventRetrying, t.rec.Attempt, p.Now, detail)
			s.enqueue(t, t.rec.Kind == dag.KindSleep && !t.rec.WakeAt.IsZero(), p.Now)
			s.event(t.run, t.rec.Key.Step, dag.EventQueued, t.rec.Attempt, p.Now, "")
			res.Requeued = append(res.Requeued, a)
			queued = true
			continue
		}
		s.setStatus(t, dag.TaskFailed, p.Now)
		t.rec.Error = detail
		s.event(t.run, t.rec.Key.Step, dag.EventFailed, t.rec.Attempt, p.Now, detail)
		if t.rec.Kind != dag.KindOnFailure {
			s.failRun(t.run, t.rec.Key.Step, detail, p.Now)
		}
		res.Failed = append(res.Failed, a)
	}
	if queued {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return res, nil
}

func compareUUID(a, b uuid.UUID) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}
