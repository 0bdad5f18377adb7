package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// PauseWorkflows implements store.Pauses. It first locks the pauses
// (PausedLock): it waits for the claims and hand-offs under way, which
// read them, to commit, and the claims after it wait for it and see the
// pause, so that none of the paused tasks is claimed once it returns.
func (s *Store) PauseWorkflows(ctx context.Context, workflow string, tenants []string, now time.Time) ([]store.WorkflowPause, error) {
	if len(tenants) == 0 {
		tenants = []string{""}
	}
	var out []store.WorkflowPause
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if err := q.PausedLock(ctx); err != nil {
			return err
		}
		rows, err := q.PausedInsert(ctx, dbsqlc.PausedInsertParams{Workflow: workflow, Tenants: tenants, Now: now})
		for _, r := range rows {
			out = append(out, store.WorkflowPause{Workflow: r.Workflow, Tenant: r.Tenant, PausedAt: r.PausedAt})
		}
		return err
	})
	if err != nil {
		return nil, wrap(err, fmt.Sprintf("pausing workflow %s", workflow))
	}
	return out, nil
}

// ResumeWorkflows implements store.Pauses.
func (s *Store) ResumeWorkflows(ctx context.Context, workflow string, tenants []string) ([]store.WorkflowPause, error) {
	if tenants == nil {
		tenants = []string{} // every pause of it, not NULL's none
	}
	rows, err := s.q.PausedDelete(ctx, dbsqlc.PausedDeleteParams{Workflow: workflow, Tenants: tenants})
	if err != nil {
		return nil, wrap(err, fmt.Sprintf("resuming workflow %s", workflow))
	}
	out := make([]store.WorkflowPause, 0, len(rows))
	for _, r := range rows {
		out = append(out, store.WorkflowPause{Workflow: r.Workflow, Tenant: r.Tenant, PausedAt: r.PausedAt})
	}
	return out, nil
}

// ListPauses implements store.Pauses.
func (s *Store) ListPauses(ctx context.Context) ([]store.WorkflowPause, error) {
	rows, err := s.q.PausedList(ctx)
	if err != nil {
		return nil, wrap(err, "listing paused workflows")
	}
	out := make([]store.WorkflowPause, 0, len(rows))
	for _, r := range rows {
		out = append(out, store.WorkflowPause{Workflow: r.Workflow, Tenant: r.Tenant, PausedAt: r.PausedAt, Queued: int(r.Queued)})
	}
	return out, nil
}
