package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// ClaimTasks implements store.Tasks.
func (s *Store) ClaimTasks(_ context.Context, p store.Claim) ([]store.ClaimedTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	claimedPerTenant := map[string]int{}
	entries := s.queue.claim(p.Limit, func(e *entry) bool {
		r := e.task.run
		if len(p.Versions) > 0 && !slices.Contains(p.Versions, r.rec.Version) || s.paused(r.rec.Workflow, r.rec.Tenant) ||
			!spec.LabelsInclude(p.Labels, e.task.labels) {
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
		if !e.wake && !s.pace(e.task, p.Now) {
			continue
		}
		out = append(out, s.start(e.task, p.Worker, e.wake, p.Now))
	}
	return out, nil
}

// start marks a task RUNNING for worker, as claimed or handed off, and
// returns it as claimed. Callers hold s.mu.
func (s *Store) start(t *task, worker string, wake bool, now time.Time) store.ClaimedTask {
	r := t.run
	queuedAt := t.rec.UpdatedAt
	at := s.setStatus(t, store.TaskRunning, now)
	t.rec.Worker = worker
	t.claimedAt = at
	if !wake {
		t.rec.Attempt++
	}
	plain := t.plain && !wake
	if plain {
		s.event(r, t.rec.Key.Step, store.EventStarted, t.rec.Attempt, at, "")
	}
	var parents []store.ParentOutput
	for _, p := range t.parents {
		pt := r.tasks[p]
		parents = append(parents, store.ParentOutput{Step: p, Status: pt.rec.Status, Output: pt.rec.Output})
	}
	failedStep, failedError := -1, ""
	if f := r.rec.Failure; f != nil {
		failedStep, failedError = f.StepIndex, f.Error
	}
	return store.ClaimedTask{
		Key: t.rec.Key, Kind: t.rec.Kind, Attempt: t.rec.Attempt, PriorAttempts: t.prior,
		Woken: wake, Plain: plain, QueuedAt: queuedAt, Workflow: r.rec.Workflow, Version: r.rec.Version,
		Tenant: r.rec.Tenant, Input: r.rec.Input, FailedStep: failedStep, Error: failedError,
		TraceContext: r.rec.TraceContext, Parents: parents,
	}
}

// handOff decides which children a batch hands to its worker (see
// store.HandOff), from the queue as it was before the batch.
type handOff struct {
	store.HandOff
	head     string // the tenant of the first task the worker could claim ...
	queued   bool   // ... if there is one
	headLane int    // that tenant's highest lane with a task queued
	s        *Store // for its pauses: a paused task is not handed off
}

// newHandOff returns nil when h hands nothing off. Callers hold s.mu.
func (s *Store) newHandOff(h store.HandOff) *handOff {
	if h.Limit <= 0 {
		return nil
	}
	out := &handOff{HandOff: h, s: s}
	if head, ok := s.queue.head(h.Versions, h.Labels); ok {
		out.head, out.queued = head.task.run.rec.Tenant, true
		out.headLane = s.queue.highestLane(out.head, h.Versions)
	}
	return out
}

// take reports whether a task that became ready goes to the worker, and
// counts it if so.
func (h *handOff) take(t *task) bool {
	if h == nil || h.Limit == 0 || !t.plain || t.limit.Key != "" || t.rate.Key != "" || !spec.LabelsInclude(h.Labels, t.labels) {
		return false
	}
	r := t.run.rec
	if len(h.Versions) > 0 && !slices.Contains(h.Versions, r.Version) || h.s.paused(r.Workflow, r.Tenant) {
		return false
	}
	// Only where the worker's next claim would take the task first: its
	// tenant's at the head, none of that tenant's in a higher lane.
	if h.queued && (h.head != r.Tenant || h.headLane > store.Lane(r.Priority, true)) {
		return false
	}
	h.Limit--
	return true
}

// owned returns the task if it is running in the given attempt.
func (s *Store) owned(a store.Attempt) (*task, bool) {
	t, ok := s.lookup(a.Key)
	if !ok || t.rec.Status != store.TaskRunning || t.rec.Attempt != a.Attempt {
		return nil, false
	}
	return t, true
}

// complete records a completion of t, which runs in c's attempt: its
// children are resolved and queued when ready, and its run completes when
// nothing is left; children h takes go to its worker instead of the
// queue. It reports whether it queued a task. Callers hold s.mu.
func (s *Store) complete(t *task, c store.Completion, h *handOff, now time.Time, res *store.FinishResult) (queued bool) {
	run := t.run
	status, typ := store.TaskCompleted, store.EventCompleted
	if c.Skipped {
		status, typ = store.TaskSkipped, store.EventSkipped
	}
	at := s.setStatus(t, status, now)
	t.rec.Output = append([]byte(nil), c.Output...)
	s.event(run, c.Key.Step, typ, c.Attempt.Attempt, at, c.Detail)
	for _, child := range dag.Resolve(run.pending, c.Children) {
		ct := run.tasks[child]
		if ct.rec.Status != store.TaskPending || run.rec.Status != store.RunRunning {
			continue
		}
		if h.take(ct) {
			// Queued and started at once, no earlier than the parent.
			s.event(run, child, store.EventQueued, ct.rec.Attempt, stamp(ct, at), "")
			res.HandedOff = append(res.HandedOff, s.start(ct, h.Worker, false, at))
			continue
		}
		// Queued no earlier than the parent that resolved it.
		s.event(run, child, store.EventQueued, ct.rec.Attempt, s.admit(ct, false, at), "")
		queued = true
	}
	if run.unresolved == 0 && run.rec.Status == store.RunRunning {
		s.endRun(run, store.RunCompleted, now)
		res.Finished = append(res.Finished, run.rec.ID)
	}
	return queued
}

// StartTasks implements store.Tasks.
func (s *Store) StartTasks(_ context.Context, tasks []store.Attempt, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range tasks {
		if t, ok := s.owned(a); ok {
			s.event(t.run, a.Key.Step, store.EventStarted, a.Attempt, stamp(t, now), "")
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
	h := s.newHandOff(r.HandOff)
	for _, c := range r.Completions {
		t, ok := s.owned(c.Attempt)
		if !ok {
			res.Stale = append(res.Stale, c.Attempt)
			continue
		}
		queued = s.complete(t, c, h, r.Now, &res) || queued
	}
	for _, rt := range r.Retries {
		t, ok := s.owned(rt.Attempt)
		if !ok {
			res.Stale = append(res.Stale, rt.Attempt)
			continue
		}
		at := s.setStatus(t, store.TaskRetrying, r.Now)
		if rt.TimedOut {
			s.event(t.run, rt.Key.Step, store.EventTimedOut, rt.Attempt.Attempt, at, rt.Error)
		}
		t.rec.Error, t.rec.WakeAt = rt.Error, rt.At
		s.timers.push(t, rt.At)
		s.timerEvent(t.run, rt.Key.Step, store.EventRetrying, rt.Attempt.Attempt, at, rt.At, rt.Error)
	}
	for _, f := range r.Failures {
		t, ok := s.owned(f.Attempt)
		if !ok {
			res.Stale = append(res.Stale, f.Attempt)
			continue
		}
		at := s.setStatus(t, store.TaskFailed, r.Now)
		if f.TimedOut {
			s.event(t.run, f.Key.Step, store.EventTimedOut, f.Attempt.Attempt, at, f.Error)
		}
		t.rec.Error = f.Error
		s.event(t.run, f.Key.Step, store.EventFailed, f.Attempt.Attempt, at, f.Error)
		if t.rec.Kind != store.KindOnFailure && s.failRun(t.run, f.Key.Step, f.Error, r.Now) {
			res.Finished = append(res.Finished, t.run.rec.ID)
		}
	}
	for _, sl := range r.Sleeps {
		t, ok := s.owned(sl.Attempt)
		if !ok {
			res.Stale = append(res.Stale, sl.Attempt)
			continue
		}
		at := s.setStatus(t, store.TaskSleeping, r.Now)
		until := at.Add(sl.For)
		t.rec.WakeAt = until
		s.timers.push(t, until)
		s.timerEvent(t.run, sl.Key.Step, store.EventSleeping, sl.Attempt.Attempt, at, until, "until "+until.UTC().Format(time.RFC3339Nano))
	}
	for _, sp := range r.Spawns {
		q, stale := s.spawn(sp, r.Now)
		if stale {
			res.Stale = append(res.Stale, sp.Attempt)
		}
		queued = queued || q
	}
	for _, a := range r.Awaits {
		q, stale := s.await(a, r.Now)
		if stale {
			res.Stale = append(res.Stale, a.Attempt)
		}
		queued = queued || q
	}
	if queued {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return res, nil
}

// AnnounceWorker implements store.Tasks.
func (s *Store) AnnounceWorker(_ context.Context, worker string, versions, labels []string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.workers[worker]) {
		s.workers[worker] = now
	}
	s.workerVersions[worker] = slices.Sorted(slices.Values(versions))
	s.workerLabels[worker] = slices.Sorted(slices.Values(labels))
	return nil
}

// Heartbeat implements store.Tasks.
func (s *Store) Heartbeat(_ context.Context, worker string, now time.Time) ([]store.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.workers[worker]) {
		s.workers[worker] = now
	}
	var held []store.Lease
	for _, t := range s.running {
		if t.rec.Worker == worker {
			held = append(held, store.Lease{Attempt: store.Attempt{Key: t.rec.Key, Attempt: t.rec.Attempt}, ClaimedAt: t.claimedAt})
		}
	}
	return held, nil
}

// ReleaseTasks implements store.Tasks.
func (s *Store) ReleaseTasks(_ context.Context, p store.Release) (store.RecoverResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res store.RecoverResult
	for _, a := range p.Attempts {
		t, ok := s.owned(a)
		if !ok || t.rec.Worker != p.Worker {
			continue
		}
		if p.Count {
			s.requeueOrFail(t, p.Reason, p.Now, &res)
			continue
		}
		wake := woken(t)
		if !wake {
			t.prior++ // the attempt does not count
		}
		s.event(t.run, a.Key.Step, store.EventQueued, t.rec.Attempt, s.enqueue(t, wake, p.Now), p.Reason)
		res.Requeued = append(res.Requeued, a)
	}
	if len(res.Requeued) > 0 {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return res, nil
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
	for _, t := range stale {
		s.requeueOrFail(t, "worker "+t.rec.Worker+" stopped heartbeating", p.Now, &res)
	}
	if len(res.Requeued) > 0 {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return res, nil
}

// requeueOrFail ends a running attempt that counts against the retry
// budget without a result: the task is queued again when it has attempts
// left (a sleep step runs no code, so losing its worker costs no attempt;
// once woken it goes back to be completed), and fails like a step that
// failed for good otherwise. Callers hold s.mu.
func (s *Store) requeueOrFail(t *task, detail string, now time.Time, res *store.RecoverResult) {
	a := store.Attempt{Key: t.rec.Key, Attempt: t.rec.Attempt}
	if t.rec.Kind.RunsNoCode() || woken(t) || t.rec.Attempt-t.prior < t.maxAttempts {
		at := s.enqueue(t, woken(t), now)
		s.timerEvent(t.run, t.rec.Key.Step, store.EventRetrying, t.rec.Attempt, at, at, detail)
		s.event(t.run, t.rec.Key.Step, store.EventQueued, t.rec.Attempt, at, "")
		res.Requeued = append(res.Requeued, a)
		return
	}
	at := s.setStatus(t, store.TaskFailed, now)
	t.rec.Error = detail
	s.event(t.run, t.rec.Key.Step, store.EventFailed, t.rec.Attempt, at, detail)
	if t.rec.Kind != store.KindOnFailure {
		s.failRun(t.run, t.rec.Key.Step, detail, now)
	}
	res.Failed = append(res.Failed, a)
}

// woken reports whether a running task was woken: a sleep step whose
// timer fired, or a task whose child runs ended. It only needs completing.
func woken(t *task) bool {
	return t.rec.Kind.Wakes() && !t.rec.WakeAt.IsZero()
}

func compareUUID(a, b uuid.UUID) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// StuckTasks implements store.Tasks.
func (s *Store) StuckTasks(_ context.Context, p store.Stuck) ([]store.StuckTask, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.StuckTask
	add := func(t *task, worker string, since time.Time) {
		r := t.run.rec
		out = append(out, store.StuckTask{
			Key: t.rec.Key, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant,
			Status: t.rec.Status, Attempt: t.rec.Attempt, Worker: worker, Since: since,
		})
	}
	for _, t := range s.running {
		if t.claimedAt.Before(p.Before) {
			add(t, t.rec.Worker, t.claimedAt)
		}
	}
	for _, e := range s.queue.entries {
		if e.valid() && e.task.rec.UpdatedAt.Before(p.Before) {
			add(e.task, "", e.task.rec.UpdatedAt)
		}
	}
	for _, tm := range s.timers.timers {
		if tm.gen == tm.task.gen && tm.at.Before(p.Before) {
			add(tm.task, "", tm.at)
		}
	}
	slices.SortFunc(out, func(a, b store.StuckTask) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		if c := compareUUID(a.Key.Run, b.Key.Run); c != 0 {
			return c
		}
		return a.Key.Step - b.Key.Step
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

// QueueDepth implements store.Tasks from the counts each tenant keeps.
func (s *Store) QueueDepth(_ context.Context, tenants int) (store.QueueDepth, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out store.QueueDepth
	var all []store.TenantDepth
	for name, ts := range s.queue.tenants {
		if ts.queued == 0 && ts.running == 0 {
			continue
		}
		out.Queued += ts.queued
		out.Running += ts.running
		all = append(all, store.TenantDepth{Tenant: name, Queued: ts.queued, Running: ts.running})
	}
	slices.SortFunc(all, func(a, b store.TenantDepth) int {
		if a.Queued != b.Queued {
			return b.Queued - a.Queued
		}
		if a.Running != b.Running {
			return b.Running - a.Running
		}
		return strings.Compare(a.Tenant, b.Tenant)
	})
	if len(all) > tenants {
		all = all[:max(tenants, 0)]
	}
	if len(all) > 0 {
		out.Tenants = all
	}
	return out, nil
}
