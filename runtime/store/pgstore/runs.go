package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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

// createChunk bounds the runs one statement creates; a larger batch takes
// several statements, still in one transaction.
const createChunk = 2000

// CreateRuns implements store.Runs: three statements per createChunk
// runs. With p.Tx (see Tx) the runs are created in the caller's
// transaction, inside a savepoint so that a failure leaves it usable.
func (s *Store) CreateRuns(ctx context.Context, p store.CreateRuns) ([]store.CreateRunResult, error) {
	var out []store.CreateRunResult
	create := func(q *dbsqlc.Queries) error {
		out = out[:0]
		for chunk := range slices.Chunk(p.Runs, createChunk) {
			res, err := createRuns(ctx, q, store.CreateRuns{Runs: chunk, Now: p.Now})
			if err != nil {
				return err
			}
			out = append(out, res...)
		}
		return nil
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
	return out, wrap(err, "creating runs")
}

func createRuns(ctx context.Context, q *dbsqlc.Queries, p store.CreateRuns) ([]store.CreateRunResult, error) {
	runs := dbsqlc.RunsInsertParams{Now: p.Now}
	for _, r := range p.Runs {
		unresolved := 0
		for _, t := range r.Tasks {
			if t.Kind != store.KindOnFailure {
				unresolved++
			}
		}
		runs.Ids = append(runs.Ids, r.ID)
		runs.Workflows = append(runs.Workflows, r.Workflow)
		runs.Versions = append(runs.Versions, r.Version)
		runs.Tenants = append(runs.Tenants, r.Tenant)
		runs.IdempotencyKeys = append(runs.IdempotencyKeys, r.IdempotencyKey)
		runs.Inputs = append(runs.Inputs, r.Input)
		runs.Unresolved = append(runs.Unresolved, int32(unresolved))
	}
	ids, err := q.RunsInsert(ctx, runs)
	if err != nil {
		return nil, err
	}
	created := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		created[id] = true
	}
	out := make([]store.CreateRunResult, len(p.Runs))
	var earlier map[uuid.UUID]bool // created by an earlier try of this call
	if len(ids) < len(p.Runs) {
		var missing []uuid.UUID
		for _, r := range p.Runs {
			if !created[r.ID] {
				missing = append(missing, r.ID)
			}
		}
		existing, err := q.RunsExisting(ctx, missing)
		if err != nil {
			return nil, err
		}
		earlier = make(map[uuid.UUID]bool, len(existing))
		for _, id := range existing {
			earlier[id] = true
		}
	}
	tasks := dbsqlc.TasksInsertParams{Now: p.Now}
	var dup dbsqlc.RunsByIdempotencyKeyParams
	for i, r := range p.Runs {
		if earlier[r.ID] {
			out[i] = store.CreateRunResult{ID: r.ID, Created: true}
			continue
		}
		if !created[r.ID] {
			dup.Workflows = append(dup.Workflows, r.Workflow)
			dup.Tenants = append(dup.Tenants, r.Tenant)
			dup.Keys = append(dup.Keys, r.IdempotencyKey)
			continue
		}
		out[i] = store.CreateRunResult{ID: r.ID, Created: true}
		tasks.Runs = append(tasks.Runs, r.ID)
		tasks.Tenants = append(tasks.Tenants, r.Tenant)
		tasks.Workflows = append(tasks.Workflows, r.Workflow)
		for _, t := range r.Tasks {
			tasks.RunIds = append(tasks.RunIds, r.ID)
			tasks.Steps = append(tasks.Steps, int16(t.Step))
			tasks.Kinds = append(tasks.Kinds, kindToDB(t.Kind))
			tasks.Parents = append(tasks.Parents, arrayLiteral(t.Parents))
			tasks.Pendings = append(tasks.Pendings, int16(t.Pending))
			tasks.Plains = append(tasks.Plains, t.Plain)
			tasks.MaxAttempts = append(tasks.MaxAttempts, int32(t.MaxAttempts))
		}
	}
	if len(tasks.RunIds) > 0 {
		if _, err := q.TasksInsert(ctx, tasks); err != nil {
			return nil, err
		}
	}
	if len(dup.Keys) > 0 {
		existing, err := q.RunsByIdempotencyKey(ctx, dup)
		if err != nil {
			return nil, err
		}
		type key struct{ workflow, tenant, key string }
		byKey := make(map[key]uuid.UUID, len(existing))
		for _, e := range existing {
			byKey[key{e.Workflow, e.Tenant, e.IdempotencyKey}] = e.ID
		}
		for i, r := range p.Runs {
			if created[r.ID] || earlier[r.ID] {
				continue
			}
			id, ok := byKey[key{r.Workflow, r.Tenant, r.IdempotencyKey}]
			if !ok {
				return nil, fmt.Errorf("run %s was not created and no run holds its idempotency key", r.ID)
			}
			out[i] = store.CreateRunResult{ID: id}
		}
	}
	return out, nil
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id uuid.UUID) (store.Run, error) {
	row, err := s.q.RunGet(ctx, id)
	if err != nil {
		return store.Run{}, wrap(notFound(err, "run "+id.String()), "reading run")
	}
	return store.Run{
		ID: row.ID, Workflow: row.Workflow, Version: row.Version, Tenant: row.Tenant,
		IdempotencyKey: row.IdempotencyKey.String, Status: store.RunStatus(row.Status), Input: row.Input,
		FailedStep: int(row.FailedStep), Error: row.Error.String, CreatedAt: row.CreatedAt, FinishedAt: deref(row.FinishedAt),
	}, nil
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
		out[i] = store.Task{
			Key: store.TaskKey{Run: r.RunID, Step: int(r.Step)}, Kind: kindFromDB(r.Kind), Status: store.TaskStatus(r.Status),
			Attempt: int(r.Attempt), Output: r.Output, Error: r.Error.String, Worker: r.Worker.String,
			WakeAt: deref(r.WakeAt), UpdatedAt: r.UpdatedAt, FinishedAt: deref(r.FinishedAt),
		}
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
			ID: r.ID, Run: r.RunID, Step: int(r.Step), Type: store.EventType(r.Type),
			Attempt: int(r.Attempt), At: r.At, Detail: r.Detail,
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

// CancelRun implements store.Runs.
func (s *Store) CancelRun(ctx context.Context, id uuid.UUID, now time.Time) (bool, error) {
	cancelled := false
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if _, err := q.RunCancel(ctx, dbsqlc.RunCancelParams{ID: id, Now: now}); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return s.mustExist(ctx, id)
			}
			return err
		}
		cancelled = true
		if err := cancelUnfinished(ctx, q, []uuid.UUID{id}, true, now, "run cancelled"); err != nil {
			return err
		}
		return q.RunNotifyFinished(ctx, id)
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return cancelled, wrap(err, "cancelling run")
}

// RetryRun implements store.Runs.
func (s *Store) RetryRun(ctx context.Context, p store.RetryRun) (bool, error) {
	reopened := false
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if _, err := q.RunReopen(ctx, p.Run); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return s.mustExist(ctx, p.Run)
			}
			return err
		}
		reopened = true
		reset := dbsqlc.TasksResetParams{RunID: p.Run, Now: p.Now}
		for _, r := range p.Reset {
			reset.Steps = append(reset.Steps, int16(r.Step))
			reset.Pendings = append(reset.Pendings, int16(r.Pending))
		}
		if err := q.TasksDequeue(ctx, dbsqlc.TasksDequeueParams{RunID: p.Run, Steps: reset.Steps}); err != nil {
			return err
		}
		if _, err := q.TasksReset(ctx, reset); err != nil {
			return err
		}
		return q.RunRecount(ctx, p.Run)
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return reopened, wrap(err, "retrying run")
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
