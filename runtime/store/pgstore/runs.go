package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// SaveWorkflow implements store.Workflows.
func (s *Store) SaveWorkflow(ctx context.Context, w store.WorkflowVersion) error {
	p := dbsqlc.WorkflowSaveParams{Version: w.Version, Name: w.Name, Spec: w.Spec, SavedAt: timeOrNull(w.SavedAt)}
	return wrap(s.q.WorkflowSave(ctx, p), "saving workflow")
}

// LoadWorkflow implements store.Workflows.
func (s *Store) LoadWorkflow(ctx context.Context, version string) (store.WorkflowVersion, error) {
	row, err := s.q.WorkflowLoad(ctx, version)
	if err != nil {
		return store.WorkflowVersion{}, wrap(notFound(err, "workflow version "+version), "loading workflow")
	}
	return store.WorkflowVersion{Version: row.Version, Name: row.Name, Spec: row.Spec, SavedAt: row.CreatedAt}, nil
}

// WorkflowVersions implements store.Workflows.
func (s *Store) WorkflowVersions(ctx context.Context, names []string) ([]store.WorkflowVersion, error) {
	if len(names) == 0 {
		return nil, nil
	}
	rows, err := s.q.WorkflowVersionsOf(ctx, names)
	if err != nil {
		return nil, wrap(err, "listing workflow versions")
	}
	out := make([]store.WorkflowVersion, len(rows))
	for i, r := range rows {
		out[i] = store.WorkflowVersion{Version: r.Version, Name: r.Name, SavedAt: r.CreatedAt}
	}
	return out, nil
}

// createChunk bounds the runs one statement creates; a larger batch takes
// several statements, still in one transaction. At 10,000, a map step of
// that many items is spawned in one statement for its runs and one for
// their tasks (spawn_test.go); the time goes to writing the rows, and
// smaller chunks measured no faster.
const createChunk = 10000

// CreateRuns implements store.Runs: two statements per createChunk runs
// (the runs, then their tasks), and two more reads when some runs were
// not created. With p.Tx (see Tx) the runs are created in the caller's
// transaction, inside a savepoint so that a failure leaves it usable.
func (s *Store) CreateRuns(ctx context.Context, p store.CreateRuns) ([]store.CreateRunResult, error) {
	for _, r := range p.Runs {
		if _, err := store.RunPriority(r.Priority); err != nil {
			return nil, fmt.Errorf("pgstore: creating runs: %w", err)
		}
	}
	var out []store.CreateRunResult
	create := func(q *dbsqlc.Queries) (err error) {
		out, err = createRuns(ctx, q, p.Runs, p.Now)
		return err
	}
	var err error
	switch tx := p.Tx.(type) {
	case nil:
		err = s.inTx(ctx, create)
	case callerTx:
		err = pgx.BeginFunc(ctx, tx.tx, func(sp pgx.Tx) error { return create(s.q.WithTx(sp)) })
	default:
		return nil, fmt.Errorf("pgstore: creating runs: the transaction is a %T, want a pgstore.Tx: %w", p.Tx, store.ErrTxUnsupported)
	}
	if err != nil {
		return nil, wrap(err, "creating runs")
	}
	return out, nil
}

// createRuns inserts the runs, finds out why those it did not insert
// were not (an earlier try of the same call created them, or an earlier
// run holds their idempotency key), and inserts the tasks of the runs it
// created.
//
// Runs are inserted in the order of their idempotency keys, across
// chunks: inserting a key waits for a concurrent transaction that
// inserted the same key to end, and two batches taking keys they share
// in different orders would deadlock. Tasks are inserted in the caller's
// order, which is the order roots are queued in.
func createRuns(ctx context.Context, q *dbsqlc.Queries, runs []store.NewRun, now time.Time) ([]store.CreateRunResult, error) {
	created := make(map[uuid.UUID]bool, len(runs))
	for chunk := range slices.Chunk(byKey(runs), createChunk) {
		ids, err := q.RunsInsert(ctx, runsInsert(chunk, now))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			created[id] = true
		}
	}
	out := make([]store.CreateRunResult, len(runs))
	var others []int // the runs not created now
	for i, r := range runs {
		if created[r.ID] {
			out[i] = store.CreateRunResult{ID: r.ID, Created: true}
		} else {
			others = append(others, i)
		}
	}
	if len(others) > 0 {
		if err := resolveOthers(ctx, q, runs, others, out); err != nil {
			return nil, err
		}
	}
	var limited []store.NewRun // created runs with a run limit or a debounce
	for chunk := range slices.Chunk(runs, createChunk) {
		tasks := dbsqlc.TasksInsertParams{Now: now, Limited: []uuid.UUID{}}
		for _, r := range chunk {
			if !created[r.ID] {
				continue
			}
			if r.RunLimit.Key != "" || r.Debounce.Key != "" {
				tasks.Limited = append(tasks.Limited, r.ID)
				limited = append(limited, r)
			}
			tasks.Runs = append(tasks.Runs, r.ID)
			tasks.Tenants = append(tasks.Tenants, r.Tenant)
			tasks.Workflows = append(tasks.Workflows, r.Workflow)
			tasks.Priorities = append(tasks.Priorities, priority(r))
			sink := sinks(r.Tasks)
			for i, t := range r.Tasks {
				pending := t.Pending
				if pending == 0 && delayed(r, now) {
					pending = 1 // the run's start, which RunsStart resolves
				}
				tasks.Sinks = append(tasks.Sinks, sink[i])
				tasks.RunIds = append(tasks.RunIds, r.ID)
				tasks.Steps = append(tasks.Steps, int16(t.Step))
				tasks.Kinds = append(tasks.Kinds, kindToDB(t.Kind))
				tasks.Parents = append(tasks.Parents, arrayLiteral(t.Parents))
				tasks.Pendings = append(tasks.Pendings, int16(pending))
				tasks.Plains = append(tasks.Plains, t.Plain)
				tasks.MaxAttempts = append(tasks.MaxAttempts, int32(t.MaxAttempts))
				tasks.LimitKeys = append(tasks.LimitKeys, t.Limit.Key)
				tasks.LimitMaxes = append(tasks.LimitMaxes, int32(t.Limit.Max))
				tasks.RateKeys = append(tasks.RateKeys, t.Rate.Key)
				tasks.RateIntervals = append(tasks.RateIntervals, t.Rate.Interval.Microseconds())
				tasks.RateBursts = append(tasks.RateBursts, int32(t.Rate.Burst))
				tasks.Labels = append(tasks.Labels, strings.Join(t.Labels, ","))
			}
		}
		if len(tasks.RunIds) == 0 {
			continue
		}
		if _, err := q.TasksInsert(ctx, tasks); err != nil {
			return nil, err
		}
	}
	if err := admitRuns(ctx, q, limited, now); err != nil {
		return nil, err
	}
	return out, setRunTimers(ctx, q, runs, created, now)
}

// setRunTimers gives the runs created now that are delayed or have a
// timeout their timers: nothing for the others.
func setRunTimers(ctx context.Context, q *dbsqlc.Queries, runs []store.NewRun, created map[uuid.UUID]bool, now time.Time) error {
	var p dbsqlc.RunTimersSetParams
	for _, r := range runs {
		if !created[r.ID] || (r.Timeout <= 0 && !delayed(r, now)) {
			continue
		}
		p.RunIds = append(p.RunIds, r.ID)
		p.Timeouts = append(p.Timeouts, r.Timeout.Microseconds())
		p.Starts = append(p.Starts, delayed(r, now))
		if delayed(r, now) {
			p.WakeAts = append(p.WakeAts, r.StartAt)
		} else {
			p.WakeAts = append(p.WakeAts, now.Add(r.Timeout))
		}
	}
	if len(p.RunIds) == 0 {
		return nil
	}
	return q.RunTimersSet(ctx, p)
}

// delayed reports whether r starts later than now: its roots wait for its
// start timer.
func delayed(r store.NewRun, now time.Time) bool { return r.StartAt.After(now) }

// admitRuns gives new runs with a run limit, whose tasks are written, a
// slot of their key or applies their strategy (store.RunLimit), in the
// order of their keys and then of the caller: a key's row is locked
// first, so that two batches sharing keys wait for each other rather
// than deadlock. A cancelInProgress may still deadlock with the end of
// a run it cancels (which locks the run, then its key): Postgres breaks
// the tie, and the trigger is retried as a transient failure.
func admitRuns(ctx context.Context, q *dbsqlc.Queries, runs []store.NewRun, now time.Time) error {
	slices.SortStableFunc(runs, func(a, b store.NewRun) int {
		return strings.Compare(a.RunLimit.Key+a.Debounce.Key, b.RunLimit.Key+b.Debounce.Key)
	})
	for _, r := range runs {
		if db := r.Debounce; db.Key != "" {
			superseded, err := q.RunDebounce(ctx, dbsqlc.RunDebounceParams{
				RunID: r.ID, Key: db.Key, WindowUs: db.Window.Microseconds(), MaxWaitUs: db.MaxWait.Microseconds(), Now: now,
			})
			if err != nil {
				return err
			}
			detail := fmt.Sprintf("superseded by a newer run %s of debounce key %s", r.ID, db.Key)
			if err := cancelRunsFor(ctx, q, superseded, now, detail); err != nil {
				return err
			}
			continue
		}
		l := r.RunLimit
		p := dbsqlc.RunLimitAdmitParams{RunID: r.ID, Key: l.Key, Max: int32(l.Max), Strategy: l.Strategy}
		for try := 0; ; try++ {
			res, err := q.RunLimitAdmit(ctx, p)
			if err != nil {
				return err
			}
			if res.Decision == "make-room" && (len(res.Others) == 0 || try > 0) {
				// Its slots are held by runs it may not cancel (reopened
				// over max, say): rather than strand the run, put it in line.
				p.Strategy = store.RunLimitQueue
				continue
			}
			switch res.Decision {
			case "make-room":
				detail := fmt.Sprintf("cancelled by a newer run %s of key %s", r.ID, l.Key)
				if err := cancelRunsFor(ctx, q, res.Others, now, detail); err != nil {
					return err
				}
				continue // the slots are back: take one
			case "cancel":
				detail := fmt.Sprintf("cancelled: key %s has %d runs in progress, its max", l.Key, l.Max)
				if len(res.Others) > 0 {
					detail = fmt.Sprintf("cancelled: key %s has %d runs in progress, its max (the newest: %s)", l.Key, l.Max, res.Others[0])
				}
				if err := cancelRunsFor(ctx, q, []uuid.UUID{r.ID}, now, detail); err != nil {
					return err
				}
			}
			break
		}
	}
	return nil
}

// cancelRunsFor cancels running runs inside a transaction, with detail
// as the reason their tasks' CANCELLED events give.
func cancelRunsFor(ctx context.Context, q *dbsqlc.Queries, ids []uuid.UUID, now time.Time, detail string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := q.RunsLock(ctx, ids); err != nil {
		return err
	}
	rows, err := q.RunsCancel(ctx, dbsqlc.RunsCancelParams{Ids: ids, Now: now})
	if err != nil || len(rows) == 0 {
		return err
	}
	cancelled := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		cancelled[i] = r.ID
	}
	return cancelUnfinished(ctx, q, cancelled, true, now, detail)
}

// byKey returns runs ordered by workflow, tenant and idempotency key, in
// byte order (runs without a key first, in the order given).
func byKey(runs []store.NewRun) []store.NewRun {
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b store.NewRun) int {
		if c := strings.Compare(a.Workflow, b.Workflow); c != 0 {
			return c
		}
		if c := strings.Compare(a.Tenant, b.Tenant); c != 0 {
			return c
		}
		return strings.Compare(a.IdempotencyKey, b.IdempotencyKey)
	})
	return sorted
}

// sinks says which of a run's tasks are sinks: tasks no other task waits
// for, the failure handler aside. The run completes when its sinks are
// resolved (see schema/0014).
func sinks(tasks []store.NewTask) []bool {
	parent := make(map[int]bool, len(tasks))
	for _, t := range tasks {
		for _, p := range t.Parents {
			parent[p] = true
		}
	}
	out := make([]bool, len(tasks))
	for i, t := range tasks {
		out[i] = t.Kind != store.KindOnFailure && !parent[t.Step]
	}
	return out
}

func runsInsert(runs []store.NewRun, now time.Time) dbsqlc.RunsInsertParams {
	p := dbsqlc.RunsInsertParams{Now: now}
	for _, r := range runs {
		unresolved := 0
		for _, sink := range sinks(r.Tasks) {
			if sink {
				unresolved++
			}
		}
		p.Ids = append(p.Ids, r.ID)
		p.Workflows = append(p.Workflows, r.Workflow)
		p.Versions = append(p.Versions, r.Version)
		p.Tenants = append(p.Tenants, r.Tenant)
		p.IdempotencyKeys = append(p.IdempotencyKeys, r.IdempotencyKey)
		p.Priorities = append(p.Priorities, priority(r))
		p.Inputs = append(p.Inputs, r.Input)
		p.UnresolvedSinks = append(p.UnresolvedSinks, int32(unresolved))
		p.TraceContexts = append(p.TraceContexts, r.TraceContext)
		var parent store.ParentRun // uuid.Nil for none: stored as NULL
		if r.Parent != nil {
			parent = *r.Parent
		}
		p.ParentRunIds = append(p.ParentRunIds, parent.ID)
		p.ParentSteps = append(p.ParentSteps, int16(parent.StepIndex))
		p.ParentIndexes = append(p.ParentIndexes, int32(parent.Index))
		p.Tags = append(p.Tags, tagsToDB(r.Tags))
	}
	return p
}

// priority is the priority the run is created with (checked by
// CreateRuns).
func priority(r store.NewRun) int16 {
	p, _ := store.RunPriority(r.Priority)
	return int16(p)
}

// resolveOthers fills in the results of the runs (at indexes others)
// that were not inserted: a run whose id exists was created by an earlier
// try of the same call, and is reported created; any other holds an
// idempotency key an earlier run holds, and that run is reported.
func resolveOthers(ctx context.Context, q *dbsqlc.Queries, runs []store.NewRun, others []int, out []store.CreateRunResult) error {
	ids := make([]uuid.UUID, len(others))
	for i, j := range others {
		ids[i] = runs[j].ID
	}
	existing, err := q.RunsExisting(ctx, ids)
	if err != nil {
		return err
	}
	earlier := make(map[uuid.UUID]bool, len(existing))
	for _, id := range existing {
		earlier[id] = true
	}
	var dup dbsqlc.RunsByIdempotencyKeyParams
	for _, j := range others {
		r := runs[j]
		if earlier[r.ID] {
			out[j] = store.CreateRunResult{ID: r.ID, Created: true}
			continue
		}
		dup.Workflows = append(dup.Workflows, r.Workflow)
		dup.Tenants = append(dup.Tenants, r.Tenant)
		dup.Keys = append(dup.Keys, r.IdempotencyKey)
	}
	if len(dup.Keys) == 0 {
		return nil
	}
	holders, err := q.RunsByIdempotencyKey(ctx, dup)
	if err != nil {
		return err
	}
	type key struct{ workflow, tenant, key string }
	holder := make(map[key]uuid.UUID, len(holders))
	for _, h := range holders {
		holder[key{h.Workflow, h.Tenant, h.IdempotencyKey}] = h.ID
	}
	for _, j := range others {
		r := runs[j]
		if earlier[r.ID] {
			continue
		}
		id, ok := holder[key{r.Workflow, r.Tenant, r.IdempotencyKey}]
		if !ok {
			return fmt.Errorf("run %s was not created and no run holds its idempotency key %q", r.ID, r.IdempotencyKey)
		}
		out[j] = store.CreateRunResult{ID: id}
	}
	return nil
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id uuid.UUID) (store.Run, error) {
	row, err := s.q.RunGet(ctx, id)
	if err != nil {
		return store.Run{}, wrap(notFound(err, "run "+id.String()), "reading run")
	}
	r := runFromRow(row)
	if err := fillWaiting(ctx, s.q, []*store.Run{&r}, []bool{row.Limited}); err != nil {
		return store.Run{}, wrap(err, "reading run")
	}
	return r, nil
}

// fillWaiting sets Waiting and DebouncedUntil of those of runs that may
// wait (limited: they have a run limit or a debounce, and are running),
// with one read of trellis_run_waiting, and none when no run may wait.
func fillWaiting(ctx context.Context, q *dbsqlc.Queries, runs []*store.Run, limited []bool) error {
	var ids []uuid.UUID
	at := map[uuid.UUID]*store.Run{}
	for i, r := range runs {
		if limited[i] && r.Status == store.RunRunning {
			ids = append(ids, r.ID)
			at[r.ID] = r
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.RunsWaitingOf(ctx, ids)
	if err != nil {
		return err
	}
	for _, w := range rows {
		if r := at[w.RunID]; r != nil {
			r.Waiting, r.DebouncedUntil = w.DueAt == nil, deref(w.DueAt)
		}
	}
	return nil
}

func runFromRow(row dbsqlc.RunGetRow) store.Run {
	return store.Run{
		ID: row.ID, Workflow: row.Workflow, Version: row.Version, Tenant: row.Tenant,
		IdempotencyKey: row.IdempotencyKey.String, Priority: int(row.Priority), Status: store.RunStatus(row.Status), Input: row.Input,
		Failure: failure(row.FailedStep, row.Error), CreatedAt: row.CreatedAt, FinishedAt: deref(row.FinishedAt),
		TraceContext: row.TraceContext, Parent: parentRun(row.ParentRunID, row.ParentStep, row.ParentIndex),
		RerunAt: deref(row.RerunAt),
		Tags:    tagsFromDB(row.Tags),
		StartAt: deref(row.StartAt), Deadline: deref(row.Deadline),
	}
}

// parentRun reads a run's parent columns, NULL for runs without one.
func parentRun(run pgtype.UUID, step pgtype.Int2, index pgtype.Int4) *store.ParentRun {
	if !run.Valid {
		return nil
	}
	return &store.ParentRun{ID: run.Bytes, StepIndex: int(step.Int16), Index: int(index.Int32)}
}

// failure reads a run's failure columns: failed_step is -1 unless a step
// failed the run, and error is NULL unless the run failed (its deadline
// passed, when failed_step is -1).
func failure(step int32, msg pgtype.Text) *store.RunFailure {
	if step < 0 && !msg.Valid {
		return nil
	}
	if step < 0 {
		return &store.RunFailure{StepIndex: -1, Error: msg.String}
	}
	return &store.RunFailure{StepIndex: int(step), Error: msg.String}
}

// ChildRuns implements store.Runs: the runs, then their tasks, in a
// read-only transaction that sees one snapshot.
func (s *Store) ChildRuns(ctx context.Context, parent store.TaskKey) ([]store.RunWithTasks, error) {
	var out []store.RunWithTasks
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		key := dbsqlc.RunsChildrenParams{RunID: parent.Run, Step: int16(parent.Step)}
		runs, err := q.RunsChildren(ctx, key)
		if err != nil || len(runs) == 0 {
			return err
		}
		out = make([]store.RunWithTasks, len(runs))
		at := make(map[uuid.UUID]int, len(runs))
		ptrs, limited := make([]*store.Run, len(runs)), make([]bool, len(runs))
		for i, r := range runs {
			out[i] = store.RunWithTasks{Run: runFromRow(dbsqlc.RunGetRow(r))}
			at[r.ID] = i
			ptrs[i], limited[i] = &out[i].Run, r.Limited
		}
		if err := fillWaiting(ctx, q, ptrs, limited); err != nil {
			return err
		}
		tasks, err := q.TasksOfChildren(ctx, dbsqlc.TasksOfChildrenParams(key))
		for _, t := range tasks {
			if i, ok := at[t.RunID]; ok {
				out[i].Tasks = append(out[i].Tasks, taskFromRow(dbsqlc.TaskListRow(t)))
			}
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, "reading child runs")
	}
	if len(out) == 0 {
		return nil, s.mustExist(ctx, parent.Run)
	}
	return out, nil
}

// ListTasks implements store.Runs.
func (s *Store) ListTasks(ctx context.Context, run uuid.UUID) ([]store.Task, error) {
	rows, err := s.q.TaskList(ctx, run)
	if err != nil {
		return nil, wrap(err, "listing tasks")
	}
	if len(rows) == 0 {
		return nil, s.mustExist(ctx, run)
	}
	out := make([]store.Task, len(rows))
	for i, r := range rows {
		out[i] = taskFromRow(r)
	}
	return out, nil
}

func taskFromRow(r dbsqlc.TaskListRow) store.Task {
	return store.Task{
		Key: store.TaskKey{Run: r.RunID, Step: int(r.Step)}, Kind: kindFromDB(r.Kind), Status: store.TaskStatus(r.Status),
		Attempt: int(r.Attempt), Output: r.Output, Error: r.Error.String, Worker: r.Worker.String,
		WakeAt: deref(r.WakeAt), UpdatedAt: r.UpdatedAt, FinishedAt: deref(r.FinishedAt),
	}
}

// RunStatuses implements store.Runs: one statement.
func (s *Store) RunStatuses(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]store.RunStatus, error) {
	out := make(map[uuid.UUID]store.RunStatus, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.RunsStatus(ctx, ids)
	if err != nil {
		return nil, wrap(err, "reading run statuses")
	}
	for _, r := range rows {
		out[r.ID] = store.RunStatus(r.Status)
	}
	return out, nil
}

// GetRuns implements store.Runs: the runs, then their tasks, in a
// read-only transaction that sees one snapshot.
func (s *Store) GetRuns(ctx context.Context, ids []uuid.UUID) ([]store.RunWithTasks, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []store.RunWithTasks
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		runs, err := q.RunsGet(ctx, ids)
		if err != nil || len(runs) == 0 {
			return err
		}
		found := make([]uuid.UUID, len(runs))
		out = make([]store.RunWithTasks, len(runs))
		at := make(map[uuid.UUID]int, len(runs))
		ptrs, limited := make([]*store.Run, len(runs)), make([]bool, len(runs))
		for i, r := range runs {
			found[i] = r.ID
			out[i] = store.RunWithTasks{Run: runFromRow(dbsqlc.RunGetRow(r))}
			at[r.ID] = i
			ptrs[i], limited[i] = &out[i].Run, r.Limited
		}
		if err := fillWaiting(ctx, q, ptrs, limited); err != nil {
			return err
		}
		tasks, err := q.TasksOfRuns(ctx, found)
		for _, t := range tasks {
			if i, ok := at[t.RunID]; ok {
				out[i].Tasks = append(out[i].Tasks, taskFromRow(dbsqlc.TaskListRow(t)))
			}
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, "reading runs")
	}
	return out, nil
}

// ListEvents implements store.Runs.
func (s *Store) ListEvents(ctx context.Context, run uuid.UUID) ([]store.Event, error) {
	rows, err := s.q.EventList(ctx, run)
	if err != nil {
		return nil, wrap(err, "listing events")
	}
	if len(rows) == 0 {
		return nil, s.mustExist(ctx, run)
	}
	out := make([]store.Event, len(rows))
	for i, r := range rows {
		out[i] = store.Event{
			ID: r.ID, Run: r.RunID, StepIndex: int(r.Step), Type: store.EventType(r.Type),
			Attempt: int(r.Attempt), At: r.At, Detail: r.Detail, WakeAt: deref(r.WakeAt),
		}
	}
	return out, nil
}

// mustExist returns ErrNotFound for an unknown run, nil otherwise.
func (s *Store) mustExist(ctx context.Context, run uuid.UUID) error {
	ok, err := s.q.RunExists(ctx, run)
	if err != nil {
		return wrap(err, "reading run")
	}
	if !ok {
		return fmt.Errorf("run %s: %w", run, store.ErrNotFound)
	}
	return nil
}

// CancelRuns implements store.Runs: one transaction, a statement per
// table whatever the number of runs.
func (s *Store) CancelRuns(ctx context.Context, ids []uuid.UUID, now time.Time) ([]store.CancelledRun, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var cancelled []store.CancelledRun
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		cancelled = nil
		if err := q.RunsLock(ctx, ids); err != nil {
			return err
		}
		rows, err := q.RunsCancel(ctx, dbsqlc.RunsCancelParams{Ids: ids, Now: now})
		if err != nil || len(rows) == 0 {
			return err
		}
		runs := make([]uuid.UUID, len(rows))
		for i, r := range rows {
			runs[i] = r.ID
			cancelled = append(cancelled, store.CancelledRun{ID: r.ID, Workflow: r.Workflow, Tenant: r.Tenant})
		}
		return cancelUnfinished(ctx, q, runs, true, now, "run cancelled")
	})
	if err != nil {
		return nil, wrap(err, "cancelling runs")
	}
	return cancelled, nil
}

// RetryRuns implements store.Runs: one transaction, a statement per table
// whatever the number of runs.
func (s *Store) RetryRuns(ctx context.Context, p store.RetryRuns) ([]uuid.UUID, error) {
	if len(p.Runs) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(p.Runs))
	reruns := []uuid.UUID{}
	for i, r := range p.Runs {
		ids[i] = r.Run
		if r.From != "" {
			reruns = append(reruns, r.Run)
		}
	}
	var reopened []uuid.UUID
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if err := q.RunsLock(ctx, ids); err != nil {
			return err
		}
		var err error
		if reopened, err = q.RunsReopen(ctx, dbsqlc.RunsReopenParams{Ids: ids, RerunIds: reruns, Now: p.Now}); err != nil || len(reopened) == 0 {
			return err
		}
		open := make(map[uuid.UUID]bool, len(reopened))
		for _, id := range reopened {
			open[id] = true
		}
		reset := dbsqlc.TasksResetParams{Now: p.Now}
		for _, r := range p.Runs {
			if !open[r.Run] {
				continue // not reopened, or given again
			}
			open[r.Run] = false
			for _, t := range r.Reset {
				reset.RunIds = append(reset.RunIds, r.Run)
				reset.Steps = append(reset.Steps, int16(t.Step))
				reset.Pendings = append(reset.Pendings, int16(t.Pending))
				reset.Details = append(reset.Details, r.Detail())
			}
		}
		if err := q.TasksDequeue(ctx, dbsqlc.TasksDequeueParams{RunIds: reset.RunIds, Steps: reset.Steps}); err != nil {
			return err
		}
		if _, err := q.TasksReset(ctx, reset); err != nil {
			return err
		}
		return q.RunsRecount(ctx, reopened)
	})
	if err != nil {
		return nil, wrap(err, "retrying runs")
	}
	return reopened, nil
}

// arrayLiteral writes ints as a Postgres array literal: {0,2}.
func arrayLiteral(ints []int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range ints {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte('}')
	return b.String()
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// timeOrNull is nil for the zero time, which a query reads as NULL.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// WaitingRuns implements store.Ops.
func (s *Store) WaitingRuns(ctx context.Context) (map[string]int, error) {
	rows, err := s.q.RunsWaitingByWorkflow(ctx)
	if err != nil {
		return nil, wrap(err, "counting waiting runs")
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Workflow] = int(r.N)
	}
	return out, nil
}
