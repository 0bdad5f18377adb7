package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// PutSchedule implements store.Schedules: one upsert that leaves a
// schedule with the same settings alone, then, when it returned nothing,
// a read of that schedule in the same transaction.
func (s *Store) PutSchedule(ctx context.Context, p store.PutSchedule) (store.PutScheduleResult, error) {
	in := p.Schedule
	var out store.PutScheduleResult
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		row, err := q.SchedulePut(ctx, dbsqlc.SchedulePutParams{
			Workflow: in.Workflow, Name: in.Name, Cron: in.Cron, Timezone: in.Timezone, Input: in.Input, Tenant: in.Tenant, Now: p.Now,
		})
		if err == nil {
			out = store.PutScheduleResult{Created: row.Created, Updated: !row.Created, Schedule: schedule(dbsqlc.TrellisSchedule{
				Workflow: row.Workflow, Name: row.Name, Cron: row.Cron, Timezone: row.Timezone, Input: row.Input, Tenant: row.Tenant,
				Paused: row.Paused, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
			})}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		same, err := q.ScheduleGet(ctx, dbsqlc.ScheduleGetParams{Workflow: in.Workflow, Name: in.Name})
		out = store.PutScheduleResult{Schedule: schedule(same)}
		return err
	})
	if err != nil {
		return store.PutScheduleResult{}, wrap(err, fmt.Sprintf("saving schedule %s of %s", in.Name, in.Workflow))
	}
	return out, nil
}

// ListSchedules implements store.Schedules.
func (s *Store) ListSchedules(ctx context.Context, q store.ScheduleQuery) ([]store.Schedule, error) {
	workflows := q.Workflows
	if workflows == nil {
		workflows = []string{}
	}
	rows, err := s.q.SchedulesList(ctx, workflows)
	if err != nil {
		return nil, wrap(err, "listing schedules")
	}
	out := make([]store.Schedule, len(rows))
	for i, r := range rows {
		out[i] = schedule(r)
	}
	return out, nil
}

// DeleteSchedule implements store.Schedules.
func (s *Store) DeleteSchedule(ctx context.Context, workflow, name string) error {
	n, err := s.q.ScheduleDelete(ctx, dbsqlc.ScheduleDeleteParams{Workflow: workflow, Name: name})
	op := fmt.Sprintf("deleting schedule %s of %s", name, workflow)
	if err != nil {
		return wrap(err, op)
	}
	if n == 0 {
		return fmt.Errorf("pgstore: %s: %w", op, store.ErrNotFound)
	}
	return nil
}

// PauseSchedule implements store.Schedules.
func (s *Store) PauseSchedule(ctx context.Context, workflow, name string, paused bool, now time.Time) (store.Schedule, error) {
	row, err := s.q.SchedulePause(ctx, dbsqlc.SchedulePauseParams{Workflow: workflow, Name: name, Paused: paused, Now: now})
	if err != nil {
		op := fmt.Sprintf("pausing schedule %s of %s", name, workflow)
		if !paused {
			op = fmt.Sprintf("resuming schedule %s of %s", name, workflow)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Schedule{}, fmt.Errorf("pgstore: %s: %w", op, store.ErrNotFound)
		}
		return store.Schedule{}, wrap(err, op)
	}
	return schedule(row), nil
}

func schedule(r dbsqlc.TrellisSchedule) store.Schedule {
	return store.Schedule{
		Workflow: r.Workflow, Name: r.Name, Cron: r.Cron, Timezone: r.Timezone, Input: r.Input, Tenant: r.Tenant,
		Paused: r.Paused, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}
