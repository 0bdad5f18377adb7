package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/effectivelabs/trellis/runtime/dag"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// SaveWorkflow implements store.Workflows.
func (s *Store) SaveWorkflow(ctx context.Context, w store.WorkflowVersion) error {
	return wrap(s.q.WorkflowSave(ctx, dbsqlc.WorkflowSaveParams{Version: w.Version, Name: w.Name, Spec: w.Spec}), "saving workflow")
}

// LoadWorkflow implements store.Workflows.
func (s *Store) LoadWorkflow(ctx context.Context, version string) (store.WorkflowVersion, error) {
	row, err := s.q.WorkflowLoad(ctx, version)
	if err != nil {
		return store.WorkflowVersion{}, wrap(notFound(err, "workflow version "+version), "loading workflow")
	}
	return store.WorkflowVersion{Version: row.Version, Name: row.Name, Spec: row.Spec}, nil
}

// CreateRun implements store.Runs. With p.Tx (a pgx.Tx) the run is created
// in the caller's transaction.
func (s *Store) CreateRun(ctx context.Context, p store.CreateRun) (store.CreateRunResult, error) {
	create := func(q *dbsqlc.Queries) (store.CreateRunResult, error) {
		unresolved := 0
		ins := dbsqlc.TasksInsertParams{RunID: p.ID, Now: p.Now}
		for _, t := range p.Tasks {
			if t.Kind != dag.KindOnFailure {
				unresolved++
			}
			ins.Steps = append(ins.Steps, int16(t.Step))
			ins.Kinds = append(ins.Kinds, int16(t.Kind))
			ins.Pendings = append(ins.Pendings, int16(t.Pending))
			ins.Plains = append(ins.Plains, t.Plain)
			ins.MaxAttempts = append(ins.MaxAttempts, int32(t.MaxAttempts))
		}
		id, err := q.RunInsert(ctx, dbsqlc.RunInsertParams{
			ID: p.ID, Workflow: p.Workflow, Version: p.Version, Tenant: p.Tenant,
			IdempotencyKey: pgtype.Text{String: p.IdempotencyKey, Valid: p.IdempotencyKey != ""},
			Input:          p.Input, Unresolved: int32(unresolved), Now: p.Now,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			existing, err := q.RunByIdempotencyKey(ctx, dbsqlc.RunByIdempotencyKeyParams{
				Workflow: p.Workflow, Tenant: p.Tenant, IdempotencyKey: pgtype.Text{String: p.IdempotencyKey, Valid: true},
			})
			if err != nil {
				return store.CreateRunResult{}, err
			}
			return store.CreateRunResult{ID: existing}, nil
		}
		if err != nil {
			return store.CreateRunResult{}, err
		}
		if _, err := q.TasksInsert(ctx, ins); err != nil {
			return store.CreateRunResult{}, err
		}
		return store.CreateRunResult{ID: id, Created: true}, nil
	}
	var res store.CreateRunResult
	var err error
	switch tx := p.Tx.(type) {
	case nil:
		err = s.inTx(ctx, func(q *dbsqlc.Queries) error {
			res, err = create(q)
			return err
		})
	case pgx.Tx:
		// A savepoint, so that a failure leaves the caller's transaction usable.
		err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			res, err = create(s.q.WithTx(sp))
			return err
		})
	default:
		return store.CreateRunResult{}, fmt.Errorf("pgstore: creating run: the transaction is a %T, want a pgx.Tx: %w", p.Tx, store.ErrTxUnsupported)
	}
	return res, wrap(err, "creating run")
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id uuid.UUID) (store.Run, error) {
	row, err := s.q.RunGet(ctx, id)
	if err != nil {
		return store.Run{}, wrap(notFound(err, "run "+id.String()), "reading run")
	}
	return store.Run{
		ID: row.ID, Workflow: row.Workflow, Version: row.Version, Tenant: row.Tenant,
		IdempotencyKey: row.IdempotencyKey.String, Status: dag.RunStatus(row.Status), Input: row.Input,
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
			Key: store.TaskKey{Run: r.RunID, Step: int(r.Step)}, Kind: dag.Kind(r.Kind), Status: dag.TaskStatus(r.Status),
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
			ID: r.ID, Run: r.RunID, Step: int(r.Step), Type: dag.EventType(r.Type),
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

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
