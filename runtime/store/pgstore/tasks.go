package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// claimScan is how many queued tasks per claimed one a limited claim looks
// at to find tenants under their limit. Fair queue ids interleave tenants,
// so a small window suffices.
const claimScan = 8

// ClaimTasks implements store.Tasks.
func (s *Store) ClaimTasks(ctx context.Context, p store.Claim) ([]store.ClaimedTask, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	versions := p.Versions
	if versions == nil {
		versions = []string{}
	}
	labels := nonNil(p.Labels)
	var out []store.ClaimedTask
	var err error
	if p.TenantLimit <= 0 {
		var rows []dbsqlc.ReadyClaimRow
		rows, err = s.q.ReadyClaim(ctx, dbsqlc.ReadyClaimParams{Versions: versions, Labels: labels, Lim: int32(p.Limit), Worker: p.Worker, Now: p.Now})
		for _, r := range rows {
			out = append(out, claimed(dbsqlc.ReadyClaimLimitedRow(r)))
		}
	} else {
		err = s.inTx(ctx, func(q *dbsqlc.Queries) error {
			if err := q.ClaimLock(ctx); err != nil {
				return err
			}
			rows, err := q.ReadyClaimLimited(ctx, dbsqlc.ReadyClaimLimitedParams{
				Versions: versions, Labels: labels, Scan: int32(claimScan*p.Limit + 64), TenantLimit: int64(p.TenantLimit),
				Lim: int32(p.Limit), Worker: p.Worker, Now: p.Now,
			})
			for _, r := range rows {
				out = append(out, claimed(r))
			}
			return err
		})
	}
	if isInvalidData(err) {
		// One task's data made the claim fail, and would make every claim
		// that picks it fail: claim the tasks one at a time instead.
		out, err = s.claimEach(ctx, p, versions)
	}
	return out, wrap(err, "claiming tasks")
}

// claimEach claims what a claim of p would take one task at a time, each
// in a savepoint of one transaction, so that a task whose data makes its
// claim fail holds up no other: it is claimed bare instead, with the
// reason in Refused, for the engine to fail it (see store.ClaimedTask). A
// task that even that fails for is left queued, and named in the error
// should no other task be claimed.
func (s *Store) claimEach(ctx context.Context, p store.Claim, versions []string) ([]store.ClaimedTask, error) {
	var out []store.ClaimedTask
	var stuck error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out, stuck = nil, nil
		q := s.q.WithTx(tx)
		var keys []dbsqlc.ReadyPickRow
		var err error
		if p.TenantLimit <= 0 {
			keys, err = q.ReadyPick(ctx, dbsqlc.ReadyPickParams{Versions: versions, Labels: nonNil(p.Labels), Lim: int32(p.Limit)})
		} else {
			if err := q.ClaimLock(ctx); err != nil {
				return err
			}
			var rows []dbsqlc.ReadyPickLimitedRow
			rows, err = q.ReadyPickLimited(ctx, dbsqlc.ReadyPickLimitedParams{
				Versions: versions, Labels: nonNil(p.Labels), Scan: int32(claimScan*p.Limit + 64), TenantLimit: int64(p.TenantLimit), Lim: int32(p.Limit),
			})
			for _, r := range rows {
				keys = append(keys, dbsqlc.ReadyPickRow(r))
			}
		}
		if err != nil {
			return err
		}
		for _, k := range keys {
			one := dbsqlc.ReadyClaimKeysParams{RunIds: []uuid.UUID{k.RunID}, Steps: []int16{k.Step}, Worker: p.Worker, Now: p.Now}
			var rows []dbsqlc.ReadyClaimKeysRow
			cause := inSavepoint(ctx, tx, func(q *dbsqlc.Queries) (err error) {
				rows, err = q.ReadyClaimKeys(ctx, one)
				return err
			})
			if cause == nil {
				for _, r := range rows {
					out = append(out, claimed(dbsqlc.ReadyClaimLimitedRow(r)))
				}
				continue
			}
			if !isInvalidData(cause) {
				return cause
			}
			var bare []dbsqlc.ReadyQuarantineRow
			err := inSavepoint(ctx, tx, func(q *dbsqlc.Queries) (err error) {
				bare, err = q.ReadyQuarantine(ctx, dbsqlc.ReadyQuarantineParams(one))
				return err
			})
			switch {
			case err == nil:
				for _, r := range bare {
					c := claimed(dbsqlc.ReadyClaimLimitedRow(r))
					c.Refused = refusal(cause)
					out = append(out, c)
				}
			case isInvalidData(err):
				stuck = fmt.Errorf("task %s/%d can be claimed neither as it is (%w) nor bare: %w", k.RunID, k.Step, cause, err)
			default:
				return err
			}
		}
		return nil
	})
	if err == nil && len(out) == 0 && stuck != nil {
		err = stuck
	}
	return out, err
}

// inSavepoint runs fn in a savepoint of tx, rolled back when fn fails.
func inSavepoint(ctx context.Context, tx pgx.Tx, fn func(q *dbsqlc.Queries) error) error {
	return pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error { return fn(dbsqlc.New(sp)) })
}

// refusal says why a task's claim failed, for its run's failure: the
// database's own message (which names the constraint or limit, not the
// value), cut short.
func refusal(err error) string {
	msg := err.Error()
	if len(msg) > 500 {
		msg = strings.ToValidUTF8(msg[:500], "") + "..."
	}
	return "the store could not claim the task (" + msg + "); it was failed rather than retried, so that it holds up no other task"
}

// attempt builds a store.Attempt from a row's columns.
func attempt(run uuid.UUID, step int16, n int32) store.Attempt {
	return store.Attempt{Key: store.TaskKey{Run: run, Step: int(step)}, Attempt: int(n)}
}

func claimed(r dbsqlc.ReadyClaimLimitedRow) store.ClaimedTask {
	c := store.ClaimedTask{
		Key: store.TaskKey{Run: r.RunID, Step: int(r.Step)}, Kind: kindFromDB(r.Kind), Attempt: int(r.Attempt),
		PriorAttempts: int(r.PriorAttempts), Woken: r.Wake, Plain: r.Plain, QueuedAt: r.QueuedAt, Workflow: r.Workflow,
		Version: r.Version, Tenant: r.Tenant, Input: r.Input, FailedStep: int(r.FailedStep), Error: r.Error,
		TraceContext: r.TraceContext,
	}
	for i, step := range r.ParentSteps {
		p := store.ParentOutput{Step: int(step)}
		if i < len(r.ParentStatuses) {
			p.Status = store.TaskStatus(r.ParentStatuses[i])
		}
		if i < len(r.ParentOutputs) {
			p.Output = r.ParentOutputs[i]
		}
		c.Parents = append(c.Parents, p)
	}
	return c
}

// StartTasks implements store.Tasks.
func (s *Store) StartTasks(ctx context.Context, tasks []store.Attempt, now time.Time) error {
	p := dbsqlc.TasksStartParams{Now: now}
	for _, a := range tasks {
		p.RunIds = append(p.RunIds, a.Key.Run)
		p.Steps = append(p.Steps, int16(a.Key.Step))
		p.Attempts = append(p.Attempts, int32(a.Attempt))
	}
	return wrap(s.q.TasksStart(ctx, p), "starting tasks")
}

// Finish implements store.Tasks: one statement per kind of result, in one
// transaction when there is more than one.
func (s *Store) Finish(ctx context.Context, r store.Results) (store.FinishResult, error) {
	var res store.FinishResult
	apply := func(q *dbsqlc.Queries) error {
		res = store.FinishResult{}
		if err := s.complete(ctx, q, r, &res); err != nil {
			return err
		}
		if err := s.retry(ctx, q, r, &res); err != nil {
			return err
		}
		if err := s.sleep(ctx, q, r, &res); err != nil {
			return err
		}
		if err := s.spawn(ctx, q, r, &res); err != nil {
			return err
		}
		if err := s.await(ctx, q, r, &res); err != nil {
			return err
		}
		return s.fail(ctx, q, r.Failures, r.Now, &res)
	}
	if r.Len() == 0 {
		return res, nil
	}
	if r.Len() == len(r.Completions) {
		// The common case: one statement, which takes its run locks itself.
		return res, wrap(apply(s.q), "recording results")
	}
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if err := q.RunsLock(ctx, runsOf(r)); err != nil {
			return err
		}
		return apply(q)
	})
	return res, wrap(err, "recording results")
}

// runsOf lists the runs a batch of results touches, to lock them first.
func runsOf(r store.Results) []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	var out []uuid.UUID
	add := func(id uuid.UUID) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, c := range r.Completions {
		add(c.Key.Run)
	}
	for _, rt := range r.Retries {
		add(rt.Key.Run)
	}
	for _, f := range r.Failures {
		add(f.Key.Run)
	}
	for _, sl := range r.Sleeps {
		add(sl.Key.Run)
	}
	for _, sp := range r.Spawns {
		add(sp.Key.Run)
	}
	for _, a := range r.Awaits {
		add(a.Key.Run)
	}
	return out
}

func (s *Store) complete(ctx context.Context, q *dbsqlc.Queries, r store.Results, res *store.FinishResult) error {
	if len(r.Completions) == 0 {
		return nil
	}
	p := dbsqlc.TasksCompleteParams{Now: r.Now, LockRuns: runsOf(store.Results{Completions: r.Completions}),
		HandOff: int32(max(r.HandOff.Limit, 0)), Versions: r.HandOff.Versions, Worker: r.HandOff.Worker,
		Labels: nonNil(r.HandOff.Labels)}
	if p.Versions == nil {
		p.Versions = []string{}
	}
	n, edges := len(r.Completions), 0
	for _, c := range r.Completions {
		edges += len(c.Children)
	}
	p.RunIds, p.Steps, p.Attempts = make([]uuid.UUID, 0, n), make([]int16, 0, n), make([]int32, 0, n)
	p.Skipped, p.Details, p.Outputs = make([]bool, 0, n), make([]string, 0, n), make([][]byte, 0, n)
	p.EdgeRuns, p.EdgeParents, p.EdgeChildren = make([]uuid.UUID, 0, edges), make([]int16, 0, edges), make([]int16, 0, edges)
	for _, c := range r.Completions {
		p.RunIds = append(p.RunIds, c.Key.Run)
		p.Steps = append(p.Steps, int16(c.Key.Step))
		p.Attempts = append(p.Attempts, int32(c.Attempt.Attempt))
		p.Skipped = append(p.Skipped, c.Skipped)
		p.Details = append(p.Details, c.Detail)
		out := c.Output
		if len(out) == 0 {
			out = nil
		}
		p.Outputs = append(p.Outputs, out)
		for _, child := range c.Children {
			p.EdgeRuns = append(p.EdgeRuns, c.Key.Run)
			p.EdgeParents = append(p.EdgeParents, int16(c.Key.Step))
			p.EdgeChildren = append(p.EdgeChildren, int16(child))
		}
	}
	rows, err := q.TasksComplete(ctx, p)
	if err != nil {
		return err
	}
	var batch map[store.TaskKey]*store.Completion
	for _, row := range rows {
		switch row.What {
		case "stale":
			res.Stale = append(res.Stale, attempt(row.RunID, row.Step, row.Attempt))
		case "finished":
			res.Finished = append(res.Finished, row.RunID)
		case "handed":
			if batch == nil {
				res.HandedOff = slices.Grow(res.HandedOff, len(rows))
				batch = make(map[store.TaskKey]*store.Completion, len(r.Completions))
				for i := range r.Completions {
					batch[r.Completions[i].Key] = &r.Completions[i]
				}
			}
			res.HandedOff = append(res.HandedOff, handedOff(row, batch))
		}
	}
	return nil
}

// handedOff is a task TasksComplete handed off, with the results of its
// parents that completed in the same batch (the statement read its
// parents as they were before it).
func handedOff(row dbsqlc.TasksCompleteRow, batch map[store.TaskKey]*store.Completion) store.ClaimedTask {
	c := claimed(dbsqlc.ReadyClaimLimitedRow{
		RunID: row.RunID, Step: row.Step, Kind: row.Kind, Attempt: row.Attempt, PriorAttempts: row.PriorAttempts,
		Plain: true, QueuedAt: row.QueuedAt, Workflow: row.Workflow, Version: row.Version, Tenant: row.Tenant,
		Input: row.Input, TraceContext: row.TraceContext, ParentSteps: row.ParentSteps,
		ParentStatuses: row.ParentStatuses, ParentOutputs: row.ParentOutputs,
	})
	for i, p := range c.Parents {
		done, ok := batch[store.TaskKey{Run: c.Key.Run, Step: p.Step}]
		if !ok {
			continue
		}
		c.Parents[i].Status, c.Parents[i].Output = store.TaskCompleted, done.Output
		if done.Skipped {
			c.Parents[i].Status = store.TaskSkipped
		}
		if len(done.Output) == 0 {
			c.Parents[i].Output = nil
		}
	}
	return c
}

func (s *Store) retry(ctx context.Context, q *dbsqlc.Queries, r store.Results, res *store.FinishResult) error {
	if len(r.Retries) == 0 {
		return nil
	}
	p := dbsqlc.TasksRetryParams{Now: r.Now}
	for _, rt := range r.Retries {
		p.RunIds = append(p.RunIds, rt.Key.Run)
		p.Steps = append(p.Steps, int16(rt.Key.Step))
		p.Attempts = append(p.Attempts, int32(rt.Attempt.Attempt))
		p.Errors = append(p.Errors, rt.Error)
		p.TimedOut = append(p.TimedOut, rt.TimedOut)
		p.WakeAts = append(p.WakeAts, rt.At)
	}
	rows, err := q.TasksRetry(ctx, p)
	for _, row := range rows {
		res.Stale = append(res.Stale, attempt(row.RunID, row.Step, row.Attempt))
	}
	return err
}

func (s *Store) sleep(ctx context.Context, q *dbsqlc.Queries, r store.Results, res *store.FinishResult) error {
	if len(r.Sleeps) == 0 {
		return nil
	}
	p := dbsqlc.TasksSleepParams{Now: r.Now}
	for _, sl := range r.Sleeps {
		p.RunIds = append(p.RunIds, sl.Key.Run)
		p.Steps = append(p.Steps, int16(sl.Key.Step))
		p.Attempts = append(p.Attempts, int32(sl.Attempt.Attempt))
		p.Micros = append(p.Micros, sl.For.Microseconds())
	}
	rows, err := q.TasksSleep(ctx, p)
	for _, row := range rows {
		res.Stale = append(res.Stale, attempt(row.RunID, row.Step, row.Attempt))
	}
	return err
}

// spawn makes tasks wait for the child runs it creates for them (see
// store.Spawn). The caller holds the runs' locks.
func (s *Store) spawn(ctx context.Context, q *dbsqlc.Queries, r store.Results, res *store.FinishResult) error {
	if len(r.Spawns) == 0 {
		return nil
	}
	p := dbsqlc.TasksWaitParams{Now: r.Now}
	for _, sp := range r.Spawns {
		p.RunIds = append(p.RunIds, sp.Key.Run)
		p.Steps = append(p.Steps, int16(sp.Key.Step))
		p.Attempts = append(p.Attempts, int32(sp.Attempt.Attempt))
		p.Counts = append(p.Counts, int32(len(sp.Runs)))
		p.Deadlines = append(p.Deadlines, sp.Deadline) // zero for none
	}
	rows, err := q.TasksWait(ctx, p)
	if err != nil {
		return err
	}
	waiting := make(map[store.Attempt]time.Time, len(rows))
	for _, row := range rows {
		waiting[attempt(row.RunID, row.Step, row.Attempt)] = row.At
	}
	for _, sp := range r.Spawns {
		at, ok := waiting[sp.Attempt]
		if !ok {
			res.Stale = append(res.Stale, sp.Attempt)
			continue
		}
		if len(sp.Runs) == 0 {
			err := q.TaskWake(ctx, dbsqlc.TaskWakeParams{RunID: sp.Key.Run, Step: int16(sp.Key.Step), At: at, Detail: "no runs to wait for"})
			if err != nil {
				return err
			}
			continue
		}
		runs := make([]store.NewRun, len(sp.Runs))
		for i := range sp.Runs {
			runs[i] = sp.Child(i)
		}
		if _, err := createRuns(ctx, q, runs, at); err != nil {
			return err
		}
	}
	return nil
}

// fail records permanent failures: the tasks fail, their runs fail (once
// each), every unfinished task of those runs is cancelled and their
// failure handlers are queued. The caller holds the runs' locks.
func (s *Store) fail(ctx context.Context, q *dbsqlc.Queries, failures []store.Failure, now time.Time, res *store.FinishResult) error {
	if len(failures) == 0 {
		return nil
	}
	p := dbsqlc.TasksFailParams{Now: now}
	for _, f := range failures {
		p.RunIds = append(p.RunIds, f.Key.Run)
		p.Steps = append(p.Steps, int16(f.Key.Step))
		p.Attempts = append(p.Attempts, int32(f.Attempt.Attempt))
		p.Errors = append(p.Errors, f.Error)
		p.TimedOut = append(p.TimedOut, f.TimedOut)
	}
	rows, err := q.TasksFail(ctx, p)
	if err != nil {
		return err
	}
	runs := dbsqlc.RunsFailParams{Now: now}
	for _, row := range rows {
		if !row.Applied {
			res.Stale = append(res.Stale, attempt(row.RunID, row.Step, row.Attempt))
			continue
		}
		if kindFromDB(row.Kind) == store.KindOnFailure {
			continue
		}
		runs.RunIds = append(runs.RunIds, row.RunID)
		runs.Steps = append(runs.Steps, int32(row.Step))
		runs.Errors = append(runs.Errors, row.Error)
	}
	if len(runs.RunIds) == 0 {
		return nil
	}
	failed, err := q.RunsFail(ctx, runs)
	if err != nil {
		return err
	}
	ids := make([]uuid.UUID, len(failed))
	for i, f := range failed {
		ids[i] = f.ID
	}
	if len(ids) == 0 {
		return nil
	}
	res.Finished = append(res.Finished, ids...)
	if err := cancelUnfinished(ctx, q, ids, false, now, "run failed"); err != nil {
		return err
	}
	_, err = q.TasksQueueHandlers(ctx, dbsqlc.TasksQueueHandlersParams{Now: now, RunIds: ids})
	return err
}

// cancelUnfinished cancels the unfinished tasks of runs whose locks the
// caller holds: queue entries and timers first, then tasks and leases.
func cancelUnfinished(ctx context.Context, q *dbsqlc.Queries, runs []uuid.UUID, withHandler bool, now time.Time, detail string) error {
	if err := q.TasksUnqueueUnfinished(ctx, dbsqlc.TasksUnqueueUnfinishedParams{RunIds: runs, WithHandler: withHandler}); err != nil {
		return err
	}
	_, err := q.TasksCancelUnfinished(ctx, dbsqlc.TasksCancelUnfinishedParams{Now: now, RunIds: runs, WithHandler: withHandler, Detail: detail})
	return err
}

// AnnounceWorker implements store.Tasks: the worker's row, with the
// versions it registered.
func (s *Store) AnnounceWorker(ctx context.Context, worker string, versions, labels []string, now time.Time) error {
	versions = slices.Sorted(slices.Values(versions))
	if versions == nil {
		versions = []string{}
	}
	labels = slices.Sorted(slices.Values(labels))
	if labels == nil {
		labels = []string{}
	}
	if err := s.q.WorkerAnnounce(ctx, dbsqlc.WorkerAnnounceParams{Worker: worker, Now: now, Versions: versions, Labels: labels}); err != nil {
		return wrap(err, "announcing worker "+worker)
	}
	return nil
}

// Heartbeat implements store.Tasks: one row per worker, and a read of the
// leases it holds.
func (s *Store) Heartbeat(ctx context.Context, worker string, now time.Time) ([]store.Lease, error) {
	if err := s.q.WorkerHeartbeat(ctx, dbsqlc.WorkerHeartbeatParams{Worker: worker, Now: now}); err != nil {
		return nil, wrap(err, "heartbeating")
	}
	rows, err := s.q.LeasesOf(ctx, worker)
	if err != nil {
		return nil, wrap(err, "reading leases")
	}
	held := make([]store.Lease, len(rows))
	for i, r := range rows {
		held[i] = store.Lease{Attempt: attempt(r.RunID, r.Step, r.Attempt), ClaimedAt: r.ClaimedAt}
	}
	return held, nil
}

// ReleaseTasks implements store.Tasks.
func (s *Store) ReleaseTasks(ctx context.Context, p store.Release) (store.RecoverResult, error) {
	var res store.RecoverResult
	if len(p.Attempts) == 0 {
		return res, nil
	}
	var runs []uuid.UUID
	var runIDs []uuid.UUID
	var steps []int16
	var attempts []int32
	for _, a := range p.Attempts {
		runIDs = append(runIDs, a.Key.Run)
		steps = append(steps, int16(a.Key.Step))
		attempts = append(attempts, int32(a.Attempt))
		runs = append(runs, a.Key.Run)
	}
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		res = store.RecoverResult{}
		if err := q.RunsLock(ctx, runs); err != nil {
			return err
		}
		if p.Count {
			held, err := q.LeasesHeld(ctx, dbsqlc.LeasesHeldParams{RunIds: runIDs, Steps: steps, Attempts: attempts, Worker: p.Worker})
			if err != nil {
				return err
			}
			return s.requeueOrFail(ctx, q, held, func(dbsqlc.LeasesHeldRow) string { return p.Reason }, p.Now, &res)
		}
		rows, err := q.LeasesRelease(ctx, dbsqlc.LeasesReleaseParams{
			RunIds: runIDs, Steps: steps, Attempts: attempts, Now: p.Now, Worker: p.Worker, Reason: p.Reason,
		})
		for _, r := range rows {
			res.Requeued = append(res.Requeued, attempt(r.RunID, r.Step, r.Attempt))
		}
		return err
	})
	return res, wrap(err, "releasing tasks")
}

// RecoverTasks implements store.Tasks.
func (s *Store) RecoverTasks(ctx context.Context, p store.Recover) (store.RecoverResult, error) {
	var res store.RecoverResult
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		res = store.RecoverResult{}
		runs, err := q.LeasesStaleRuns(ctx, dbsqlc.LeasesStaleRunsParams{StaleBefore: p.StaleBefore, Lim: int32(limit)})
		if err != nil || len(runs) == 0 {
			return err
		}
		if err := q.RunsLock(ctx, runs); err != nil {
			return err
		}
		stale, err := q.LeasesStale(ctx, dbsqlc.LeasesStaleParams{RunIds: runs, StaleBefore: p.StaleBefore})
		if err != nil || len(stale) == 0 {
			return err
		}
		held := make([]dbsqlc.LeasesHeldRow, len(stale))
		for i, l := range stale {
			held[i] = dbsqlc.LeasesHeldRow(l)
		}
		detail := func(l dbsqlc.LeasesHeldRow) string { return "worker " + l.Worker + " stopped heartbeating" }
		if err := s.requeueOrFail(ctx, q, held, detail, p.Now, &res); err != nil {
			return err
		}
		return q.WorkersForget(ctx, p.StaleBefore)
	})
	return res, wrap(err, "recovering tasks")
}

// requeueOrFail ends running attempts that count against the retry budget
// without a result: each task is queued again when it has attempts left
// (a sleep or map step runs no code, so losing its worker costs no
// attempt; once woken, it has a wake time, it goes back to be completed),
// and fails like
// a step that failed for good otherwise. The caller holds the runs' locks
// and the leases'.
func (s *Store) requeueOrFail(ctx context.Context, q *dbsqlc.Queries, leases []dbsqlc.LeasesHeldRow, detail func(dbsqlc.LeasesHeldRow) string, now time.Time, res *store.RecoverResult) error {
	requeue := dbsqlc.LeasesRequeueParams{Now: now}
	var failures []store.Failure
	for _, l := range leases {
		a := attempt(l.RunID, l.Step, l.Attempt)
		kind := kindFromDB(l.Kind)
		woken := kind.Wakes() && l.WakeAt != nil
		if kind.RunsNoCode() || woken || l.Attempt-l.PriorAttempts < l.MaxAttempts {
			requeue.RunIds = append(requeue.RunIds, l.RunID)
			requeue.Steps = append(requeue.Steps, l.Step)
			requeue.Attempts = append(requeue.Attempts, l.Attempt)
			requeue.Wakes = append(requeue.Wakes, woken)
			requeue.Details = append(requeue.Details, detail(l))
			res.Requeued = append(res.Requeued, a)
			continue
		}
		failures = append(failures, store.Failure{Attempt: a, Error: detail(l)})
		res.Failed = append(res.Failed, a)
	}
	if len(requeue.RunIds) > 0 {
		if _, err := q.LeasesRequeue(ctx, requeue); err != nil {
			return err
		}
	}
	var fr store.FinishResult
	return s.fail(ctx, q, failures, now, &fr)
}

// StuckTasks implements store.Tasks.
func (s *Store) StuckTasks(ctx context.Context, p store.Stuck) ([]store.StuckTask, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.q.TasksStuck(ctx, dbsqlc.TasksStuckParams{Before: p.Before, Lim: int32(limit)})
	if err != nil {
		return nil, wrap(err, "listing stuck tasks")
	}
	out := make([]store.StuckTask, len(rows))
	for i, r := range rows {
		out[i] = store.StuckTask{
			Key: store.TaskKey{Run: r.RunID, Step: int(r.Step)}, Workflow: r.Workflow, Version: r.Version,
			Tenant: r.Tenant, Status: store.TaskStatus(r.Status), Attempt: int(r.Attempt), Worker: r.Worker, Since: r.Since,
		}
	}
	return out, nil
}

// QueueDepth implements store.Tasks: one statement over the ready queue
// and the leases.
func (s *Store) QueueDepth(ctx context.Context, tenants int) (store.QueueDepth, error) {
	// One row at least, for the totals it carries.
	rows, err := s.q.ReadyDepth(ctx, int32(max(tenants, 1)))
	if err != nil {
		return store.QueueDepth{}, wrap(err, "counting queued tasks")
	}
	var out store.QueueDepth
	for i, r := range rows {
		out.Queued, out.Running = int(r.TotalQueued), int(r.TotalRunning)
		if i < tenants {
			out.Tenants = append(out.Tenants, store.TenantDepth{Tenant: r.Tenant, Queued: int(r.Queued), Running: int(r.Running)})
		}
	}
	return out, nil
}

// nonNil returns s, or an empty slice for nil: a nil slice is sent as
// NULL, which no array contains.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
