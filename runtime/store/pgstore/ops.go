package pgstore

import (
	"bytes"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// ListRuns implements store.Ops. The query reads an index of schema/0005
// in listing order, planned for the filters given (see OpsCustomPlans).
// Several statuses take one such read each, merged here: an index is
// read in order for one status at a time.
func (s *Store) ListRuns(ctx context.Context, q store.RunQuery) ([]store.Run, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	p := dbsqlc.OpsRunsListParams{
		Workflow: q.Workflow, Tenant: q.Tenant, IdempotencyKey: q.IdempotencyKey,
		CreatedFrom: timeOrNull(q.CreatedFrom), CreatedTo: timeOrNull(q.CreatedTo), Lim: int32(limit),
		WithInput: q.WithInput, InputContains: make([][]byte, len(q.InputContains)),
	}
	for i, doc := range q.InputContains {
		p.InputContains[i] = doc
	}
	if q.After != nil {
		p.AfterCreated, p.AfterID = &q.After.CreatedAt, q.After.ID
	}
	statuses := []string{""}
	if len(q.Statuses) > 0 {
		statuses = statuses[:0]
		for _, st := range q.Statuses {
			if !slices.Contains(statuses, string(st)) {
				statuses = append(statuses, string(st))
			}
		}
	}
	var out []store.Run
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := q.OpsCustomPlans(ctx); err != nil {
			return err
		}
		for _, st := range statuses {
			p.Status = st
			rows, err := q.OpsRunsList(ctx, p)
			if err != nil {
				return err
			}
			for _, r := range rows {
				out = append(out, store.Run{
					ID: r.ID, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant,
					IdempotencyKey: r.IdempotencyKey.String, Status: store.RunStatus(r.Status),
					FailedStep: int(r.FailedStep), Error: r.Error.String, CreatedAt: r.CreatedAt, FinishedAt: deref(r.FinishedAt),
					Input: r.Input,
				})
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "listing runs")
	}
	if len(statuses) > 1 {
		slices.SortFunc(out, func(a, b store.Run) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return bytes.Compare(b.ID[:], a.ID[:])
		})
		out = out[:min(len(out), limit)]
	}
	return out, nil
}

// ListWorkers implements store.Ops.
func (s *Store) ListWorkers(ctx context.Context) ([]store.Worker, error) {
	rows, err := s.q.OpsWorkers(ctx, leaderNameLock)
	if err != nil {
		return nil, wrap(err, "listing workers")
	}
	out := make([]store.Worker, len(rows))
	for i, r := range rows {
		out[i] = store.Worker{ID: r.Worker, HeartbeatAt: r.HeartbeatAt, Leases: int(r.Leases), Leader: r.Leader}
	}
	return out, nil
}

// QueueStats implements store.Ops.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStat, error) {
	rows, err := s.q.OpsQueue(ctx)
	if err != nil {
		return nil, wrap(err, "reading the queue")
	}
	out := make([]store.QueueStat, len(rows))
	for i, r := range rows {
		out[i] = store.QueueStat{
			Tenant: r.Tenant, Workflow: r.Workflow, Queued: int(r.Queued), Running: int(r.Running),
			OldestQueuedAt: deref(r.OldestQueuedAt),
		}
	}
	return out, nil
}

// ListWorkflows implements store.Ops.
func (s *Store) ListWorkflows(ctx context.Context) ([]store.WorkflowVersion, error) {
	rows, err := s.q.OpsWorkflows(ctx)
	if err != nil {
		return nil, wrap(err, "listing workflows")
	}
	out := make([]store.WorkflowVersion, len(rows))
	for i, r := range rows {
		out[i] = store.WorkflowVersion{Version: r.Version, Name: r.Name, Spec: r.Spec, SavedAt: r.CreatedAt}
	}
	return out, nil
}
