package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
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
		WithInput: q.WithInput, InputContains: documents(q.InputContains),
	}
	if q.After != nil {
		p.AfterCreated, p.AfterID = &q.After.CreatedAt, q.After.ID
	}
	out, err := byStatus(ctx, s, q.Statuses, limit, store.CursorOf, func(qs *dbsqlc.Queries, status string) ([]store.Run, error) {
		p.Status = status
		rows, err := qs.OpsRunsList(ctx, p)
		runs := make([]store.Run, len(rows))
		for i, r := range rows {
			runs[i] = store.Run{
				ID: r.ID, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant,
				IdempotencyKey: r.IdempotencyKey.String, Status: store.RunStatus(r.Status),
				FailedStep: int(r.FailedStep), Error: r.Error.String, CreatedAt: r.CreatedAt, FinishedAt: deref(r.FinishedAt),
				Input: r.Input,
			}
		}
		return runs, err
	})
	if err != nil {
		return nil, wrap(err, "listing runs")
	}
	return out, nil
}

// scanned is a run a scan read, and whether its input matched.
type scanned struct {
	store.Run
	matched bool
}

// ScanRuns implements store.Ops: OpsRunsScan reads the window and checks
// the documents in one statement per status.
func (s *Store) ScanRuns(ctx context.Context, q store.RunQuery) ([]store.Run, *store.RunCursor, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	p := dbsqlc.OpsRunsScanParams{
		Workflow: q.Workflow, Tenant: q.Tenant, IdempotencyKey: q.IdempotencyKey,
		CreatedFrom: timeOrNull(q.CreatedFrom), CreatedTo: timeOrNull(q.CreatedTo), Lim: int32(limit),
		WithInput: q.WithInput, InputContains: documents(q.InputContains),
	}
	if q.After != nil {
		p.AfterCreated, p.AfterID = &q.After.CreatedAt, q.After.ID
	}
	read, err := byStatus(ctx, s, q.Statuses, limit, func(r scanned) store.RunCursor { return store.CursorOf(r.Run) }, func(qs *dbsqlc.Queries, status string) ([]scanned, error) {
		p.Status = status
		rows, err := qs.OpsRunsScan(ctx, p)
		runs := make([]scanned, len(rows))
		for i, r := range rows {
			runs[i] = scanned{store.Run{
				ID: r.ID, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant,
				IdempotencyKey: r.IdempotencyKey.String, Status: store.RunStatus(r.Status),
				FailedStep: int(r.FailedStep), Error: r.Error.String, CreatedAt: r.CreatedAt, FinishedAt: deref(r.FinishedAt),
				Input: r.Input,
			}, r.Matched.Bool}
		}
		return runs, err
	})
	if err != nil {
		return nil, nil, wrap(err, "scanning runs")
	}
	var reached *store.RunCursor
	if len(read) == limit {
		c := store.CursorOf(read[limit-1].Run)
		reached = &c
	}
	out := make([]store.Run, 0, len(read))
	for _, r := range read {
		if r.matched {
			out = append(out, r.Run)
		}
	}
	return out, reached, nil
}

// documents passes JSON documents as jsonb[]: never nil, so that none is
// an empty array.
func documents(docs []json.RawMessage) [][]byte {
	out := make([][]byte, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}

// byStatus runs a listing statement once per status (once when there is
// no status filter), in one read-only transaction planned for its
// parameters, and merges what they return into the first limit in
// listing order.
func byStatus[R any](ctx context.Context, s *Store, statuses []store.RunStatus, limit int,
	cursor func(R) store.RunCursor, query func(*dbsqlc.Queries, string) ([]R, error),
) ([]R, error) {
	names := []string{""}
	if len(statuses) > 0 {
		names = names[:0]
		for _, st := range statuses {
			if !slices.Contains(names, string(st)) {
				names = append(names, string(st))
			}
		}
	}
	var out []R
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		qs := s.q.WithTx(tx)
		if err := qs.OpsCustomPlans(ctx); err != nil {
			return err
		}
		for _, name := range names {
			rows, err := query(qs, name)
			if err != nil {
				return err
			}
			out = append(out, rows...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(names) > 1 {
		slices.SortFunc(out, func(a, b R) int {
			x, y := cursor(a), cursor(b)
			if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
				return c
			}
			return bytes.Compare(y.ID[:], x.ID[:])
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
