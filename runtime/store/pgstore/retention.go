package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// PurgeRuns implements store.Retention: one statement (RunsPurge) in a
// transaction that plans it for its values, or one count with DryRun.
func (s *Store) PurgeRuns(ctx context.Context, p store.Purge) (store.PurgeResult, error) {
	if err := p.Check(); err != nil {
		return store.PurgeResult{}, fmt.Errorf("pgstore: purging runs: %w", err)
	}
	if p.DryRun {
		n, err := s.q.RunsPurgeCount(ctx, dbsqlc.RunsPurgeCountParams{
			Status: string(p.Status), FinishedBefore: p.FinishedBefore, Workflow: p.Workflow, Tenant: p.Tenant, Tags: tagsFilter(p.Tags),
		})
		if err != nil {
			return store.PurgeResult{}, wrap(err, "counting runs to purge")
		}
		return store.PurgeResult{Runs: int(n)}, nil
	}
	params := dbsqlc.RunsPurgeParams{
		Status: string(p.Status), FinishedBefore: p.FinishedBefore, Workflow: p.Workflow, Tenant: p.Tenant, Tags: tagsFilter(p.Tags),
		Lim: pgtype.Int8{Int64: int64(p.Limit), Valid: p.Limit > 0},
	}
	var n int32
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		if err := q.PurgeSettings(ctx); err != nil {
			return err
		}
		var err error
		n, err = q.RunsPurge(ctx, params)
		return err
	})
	if err != nil {
		return store.PurgeResult{}, wrap(err, "purging runs")
	}
	return store.PurgeResult{Runs: int(n)}, nil
}
