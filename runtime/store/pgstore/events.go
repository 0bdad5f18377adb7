package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// errEventRun refuses an event addressed to a run that is not a run of
// its workflow.
var errEventRun = errors.New("no such run of the workflow")

// SendEvents implements store.Events: per event, one insert (which finds
// a repeat, by its ID), one update that gives its payload to the waits it
// reaches, and one statement that wakes them, all in one transaction that first locks the runs events
// are sent to and the addresses of those sent with keys (schema/0013).
func (s *Store) SendEvents(ctx context.Context, p store.SendEvents) ([]store.SentEvent, error) {
	var out []store.SentEvent
	send := func(q *dbsqlc.Queries) (err error) {
		out, err = sendEvents(ctx, q, p)
		return err
	}
	var err error
	switch tx := p.Tx.(type) {
	case nil:
		err = s.inTx(ctx, send)
	case callerTx:
		err = pgx.BeginFunc(ctx, tx.tx, func(sp pgx.Tx) error { return send(s.q.WithTx(sp)) })
	default:
		return nil, fmt.Errorf("pgstore: sending events: the transaction is a %T, want a pgstore.Tx: %w", p.Tx, store.ErrTxUnsupported)
	}
	if errors.Is(err, errEventRun) {
		return nil, fmt.Errorf("pgstore: sending events: %w: %w", err, store.ErrNotFound)
	}
	return out, wrap(err, "sending events")
}

func sendEvents(ctx context.Context, q *dbsqlc.Queries, p store.SendEvents) ([]store.SentEvent, error) {
	var runs []uuid.UUID
	var locks dbsqlc.EventLocksParams
	for _, ev := range p.Events {
		if ev.Run != uuid.Nil {
			runs = append(runs, ev.Run)
			continue
		}
		locks.Workflows = append(locks.Workflows, ev.Workflow)
		locks.Tenants = append(locks.Tenants, ev.Tenant)
		locks.Names = append(locks.Names, ev.Name)
		locks.Keys = append(locks.Keys, ev.Key)
	}
	// Runs first, then addresses: the order of Finish's awaits.
	if len(runs) > 0 {
		rows, err := q.EventRunsLock(ctx, runs)
		if err != nil {
			return nil, err
		}
		workflows := make(map[uuid.UUID]string, len(rows))
		for _, r := range rows {
			workflows[r.ID] = r.Workflow
		}
		for _, ev := range p.Events {
			if ev.Run != uuid.Nil && workflows[ev.Run] != ev.Workflow {
				return nil, fmt.Errorf("event %s to run %s of %s: %w", ev.Name, ev.Run, ev.Workflow, errEventRun)
			}
		}
	}
	if len(locks.Workflows) > 0 {
		if err := q.EventLocks(ctx, locks); err != nil {
			return nil, err
		}
	}
	out := make([]store.SentEvent, len(p.Events))
	for i, ev := range p.Events {
		ins := dbsqlc.EventInsertParams{Workflow: ev.Workflow, Name: ev.Name, RunID: ev.Run, Tenant: ev.Tenant, Key: ev.Key,
			EventID: ev.ID, Payload: ev.Payload, SentAt: p.Now}
		ids, err := q.EventInsert(ctx, ins)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			out[i].Repeat = true
			continue
		}
		var wake dbsqlc.TasksWakeParams
		add := func(run uuid.UUID, step int16) {
			wake.RunIds = append(wake.RunIds, run)
			wake.Steps = append(wake.Steps, step)
			wake.Ats = append(wake.Ats, p.Now)
			wake.Details = append(wake.Details, "event "+ev.Name+" received")
		}
		if ev.Run != uuid.Nil {
			rows, err := q.EventDeliverToRun(ctx, dbsqlc.EventDeliverToRunParams{Payload: ev.Payload, RunID: ev.Run, Name: ev.Name})
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				add(r.RunID, r.Step)
			}
		} else {
			rows, err := q.EventDeliverByKey(ctx, dbsqlc.EventDeliverByKeyParams{
				Payload: ev.Payload, Workflow: ev.Workflow, Tenant: ev.Tenant, Name: ev.Name, Key: ev.Key, SentAt: p.Now,
			})
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				add(r.RunID, r.Step)
			}
		}
		if len(wake.RunIds) > 0 {
			if err := q.TasksWake(ctx, wake); err != nil {
				return nil, err
			}
		}
		out[i].Woken = len(wake.RunIds)
	}
	return out, nil
}

// await makes wait tasks wait for their events (see store.Await). The
// caller holds the runs' locks; await takes the keyed waits' event locks
// before it reads the events sent.
func (s *Store) await(ctx context.Context, q *dbsqlc.Queries, r store.Results, res *store.FinishResult) error {
	if len(r.Awaits) == 0 {
		return nil
	}
	var locks dbsqlc.AwaitLocksParams
	p := dbsqlc.TasksAwaitParams{Now: r.Now}
	for _, a := range r.Awaits {
		p.RunIds = append(p.RunIds, a.Key.Run)
		p.Steps = append(p.Steps, int16(a.Key.Step))
		p.Attempts = append(p.Attempts, int32(a.Attempt.Attempt))
		p.Names = append(p.Names, a.Event)
		p.Keyed = append(p.Keyed, a.Keyed)
		p.Keys = append(p.Keys, a.EventKey)
		p.Deadlines = append(p.Deadlines, a.Deadline) // zero for none
		if a.Keyed {
			locks.RunIds = append(locks.RunIds, a.Key.Run)
			locks.Names = append(locks.Names, a.Event)
			locks.Keys = append(locks.Keys, a.EventKey)
		}
	}
	if len(locks.RunIds) > 0 {
		if err := q.AwaitLocks(ctx, locks); err != nil {
			return err
		}
	}
	rows, err := q.TasksAwait(ctx, p)
	if err != nil {
		return err
	}
	moved := make(map[store.Attempt]bool, len(rows))
	var wake dbsqlc.TasksWakeParams
	for _, row := range rows {
		moved[attempt(row.RunID, row.Step, row.Attempt)] = true
		if row.Received {
			wake.RunIds = append(wake.RunIds, row.RunID)
			wake.Steps = append(wake.Steps, row.Step)
			wake.Ats = append(wake.Ats, row.At)
			wake.Details = append(wake.Details, "event "+row.Name+" received")
		}
	}
	for _, a := range r.Awaits {
		if !moved[a.Attempt] {
			res.Stale = append(res.Stale, a.Attempt)
		}
	}
	if len(wake.RunIds) > 0 {
		return q.TasksWake(ctx, wake)
	}
	return nil
}

// PurgeEvents implements store.Retention: one statement, through the
// index of keyed events by age.
func (s *Store) PurgeEvents(ctx context.Context, sentBefore time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	n, err := s.q.SentEventsPurge(ctx, dbsqlc.SentEventsPurgeParams{SentBefore: sentBefore, Lim: int64(limit)})
	return int(n), wrap(err, "purging events")
}
