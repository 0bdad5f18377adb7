package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// FireTimers implements store.Timers: one transaction that locks the due
// timers and those of their runs no other transaction holds, fires the
// timers of the runs it locked, and completes the sleep steps that woke
// (TasksComplete, as Finish does). A run held elsewhere (its results being
// recorded, or the run cancelled, which also drops its timers) keeps its
// timers for the next round: waiting for it while holding timers could
// deadlock.
func (s *Store) FireTimers(ctx context.Context, now time.Time, limit int) ([]store.FiredTimer, error) {
	if limit <= 0 {
		limit = 1000
	}
	// Debounced runs whose window passed start first, each in its own
	// turn of its key (see trellis_run_limit_fire): one index probe when
	// none is due.
	if _, err := s.q.RunsDebounceFire(ctx, dbsqlc.RunsDebounceFireParams{Now: now, Lim: int32(limit)}); err != nil {
		return nil, wrap(err, "starting debounced runs")
	}
	var fired []store.FiredTimer
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		fired = nil
		due, err := q.TimersDue(ctx, dbsqlc.TimersDueParams{Now: now, Lim: int32(limit)})
		if err != nil || len(due) == 0 {
			return err
		}
		runs := make([]uuid.UUID, len(due))
		for i, d := range due {
			runs[i] = d.RunID
		}
		locked, err := q.TimersLockRuns(ctx, runs)
		if err != nil {
			return err
		}
		held := make(map[uuid.UUID]bool, len(locked))
		for _, id := range locked {
			held[id] = true
		}
		p := dbsqlc.TimersFireParams{Now: now}
		for _, d := range due {
			if held[d.RunID] {
				p.RunIds = append(p.RunIds, d.RunID)
				p.Steps = append(p.Steps, d.Step)
			}
		}
		if len(p.RunIds) == 0 {
			return nil
		}
		rows, err := q.TimersFire(ctx, p)
		if err != nil {
			return err
		}
		done := store.Results{Now: now}
		for _, r := range rows {
			key := store.TaskKey{Run: r.RunID, Step: int(r.Step)}
			fired = append(fired, store.FiredTimer{Key: key, Sleep: r.Wake, Due: r.Due, Completed: r.Complete,
				Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant})
			if r.Complete {
				children := make([]int, len(r.Children))
				for i, c := range r.Children {
					children[i] = int(c)
				}
				done.Completions = append(done.Completions, store.Completion{
					Attempt: store.Attempt{Key: key, Attempt: int(r.Attempt)}, Woken: true, Children: children,
				})
			}
		}
		var res store.FinishResult
		if err := s.complete(ctx, q, done, &res); err != nil {
			return err
		}
		if len(res.Stale) > 0 {
			return fmt.Errorf("%d woken sleep steps were not running", len(res.Stale))
		}
		finished := map[uuid.UUID]bool{}
		for _, id := range res.Finished {
			finished[id] = true
		}
		for i := range fired { // once per run
			fired[i].RunFinished = fired[i].Completed && finished[fired[i].Key.Run]
			delete(finished, fired[i].Key.Run)
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err, "firing timers")
	}
	return fired, nil
}

// NextTimer implements store.Timers.
func (s *Store) NextTimer(ctx context.Context) (time.Time, bool, error) {
	at, err := s.q.TimerNext(ctx)
	found := err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return time.Time{}, false, wrap(err, "reading next timer")
	}
	deadline, err := s.q.RunTimerNext(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return at, found, nil
	}
	if err != nil {
		return time.Time{}, false, wrap(err, "reading next run timer")
	}
	if !found || deadline.Before(at) {
		at, found = deadline, true
	}
	return at, found, nil
}

// Leadership implements store.Coordination with a session advisory lock
// held on a connection of its own: the pool would hand a pooled connection
// (and the lock with it) to someone else, while a dedicated connection
// dies with its process, releasing the lock for another leader.
//
// The leader also takes a second lock, named after itself (leaderNameLock
// followed by its worker id), on the same connection, so that anyone can
// tell which worker leads (ListWorkers) from pg_locks: the name lives and
// dies with the leadership, and no table row can outlive a leader.
func (s *Store) Leadership(worker string) store.Elector {
	return &elector{s: s, worker: worker}
}

type elector struct {
	s      *Store
	worker string
	mu     sync.Mutex
	conn   *pgx.Conn
	leads  bool
	named  bool // holds the lock that names it leader
}

// leaderLock names the leader's advisory lock (see AdvisoryTryLock in
// queries/coordination.sql); taking and releasing it both use it.
const leaderLock = "leader"

// leaderNameLock, followed by a worker id, names the lock a leader holds
// to say who it is (see Leadership); OpsWorkers looks for it.
const leaderNameLock = "leader:"

// leaderOpTimeout bounds each round trip of the elector, so that a
// connection that hangs (rather than breaks) cannot hold the leader's loop.
const leaderOpTimeout = 5 * time.Second

func (e *elector) TryLead(ctx context.Context) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, leaderOpTimeout)
	defer cancel()
	if e.conn != nil && e.conn.Ping(ctx) != nil {
		// The connection broke, and the lock went with it.
		e.closeLocked()
	}
	if e.leads {
		e.name(ctx)
		return true, nil
	}
	if e.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, e.s.pool.Config().ConnConfig.Copy())
		if err != nil {
			return false, wrap(err, "connecting for leadership")
		}
		e.conn = conn
	}
	leads, err := dbsqlc.New(e.conn).AdvisoryTryLock(ctx, leaderLock)
	if err != nil {
		e.closeLocked()
		return false, wrap(err, "seeking leadership")
	}
	e.leads = leads
	if leads {
		e.name(ctx)
	}
	return leads, nil
}

// name takes, once leading, the lock that names this worker the leader.
// It is only information: failing to take it (an earlier process of the
// same worker id still holds it for a moment, or the connection broke,
// which the next TryLead finds) costs no leadership, and the next TryLead
// tries again.
func (e *elector) name(ctx context.Context) {
	if !e.named {
		named, err := dbsqlc.New(e.conn).AdvisoryTryLock(ctx, leaderNameLock+e.worker)
		e.named = err == nil && named
	}
}

func (e *elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == nil {
		return nil
	}
	if e.conn.IsClosed() {
		// Session advisory locks end with their connection: there is
		// nothing left to resign. (pgx closes a connection whose query a
		// cancelled context interrupted, as stopping an engine does to a
		// TryLead in flight.)
		e.conn, e.leads, e.named = nil, false, false
		return nil
	}
	var err error
	if e.named {
		// First, so that no two workers are named leader at once.
		err = dbsqlc.New(e.conn).AdvisoryUnlock(ctx, leaderNameLock+e.worker)
	}
	if e.leads && err == nil {
		err = dbsqlc.New(e.conn).AdvisoryUnlock(ctx, leaderLock)
	}
	e.closeLocked()
	return wrap(err, "resigning leadership")
}

func (e *elector) closeLocked() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.conn.Close(ctx)
	e.conn, e.leads, e.named = nil, false, false
}

// Listen implements store.Coordination with LISTEN on a connection of its
// own. When the connection breaks it reconnects, and reports TasksReady
// once reconnected, since notifications may have been missed meanwhile.
func (s *Store) Listen(ctx context.Context) (<-chan store.Notification, error) {
	conn, channel, err := s.listenConn(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Notification, 256)
	go func() {
		defer close(out)
		backoff := 100 * time.Millisecond
		for {
			if conn == nil {
				t := time.NewTimer(backoff)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				if conn, channel, err = s.listenConn(ctx); err != nil {
					conn = nil
					backoff = min(2*backoff, 5*time.Second)
					continue
				}
				backoff = 100 * time.Millisecond
				deliver(out, store.Notification{Kind: store.TasksReady})
			}
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = conn.Close(closeCtx)
				cancel()
				conn = nil
				if ctx.Err() != nil {
					return
				}
				continue
			}
			if n.Channel != channel {
				continue
			}
			if n.Payload == "timer" {
				deliver(out, store.Notification{Kind: store.TimerSet})
				continue
			}
			if id, ok := strings.CutPrefix(n.Payload, "finished "); ok {
				if run, err := uuid.Parse(id); err == nil {
					deliver(out, store.Notification{Kind: store.RunFinished, Run: run})
				}
				continue
			}
			deliver(out, store.Notification{Kind: store.TasksReady})
		}
	}()
	return out, nil
}

// deliver sends n unless the reader is behind: notifications are hints,
// and engines poll as well.
func deliver(out chan<- store.Notification, n store.Notification) {
	select {
	case out <- n:
	default:
	}
}

func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, string, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, "", wrap(err, "connecting to listen")
	}
	channel, err := dbsqlc.New(conn).NotifyChannel(ctx)
	if err != nil {
		_ = conn.Close(ctx)
		return nil, "", wrap(err, "listening")
	}
	// Not in sqlc: LISTEN takes an identifier, which no query parameter can be.
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(ctx)
		return nil, "", wrap(err, "listening")
	}
	return conn, channel, nil
}

// vacuumAfter is how many dead rows make a hot table worth vacuuming.
const vacuumAfter = 5000

// Maintain implements store.Coordination. It vacuums those of the small
// tables every task passes through that hold many dead rows: each claimed
// task leaves a dead entry at the front of the queue's index, which every
// claim would otherwise step over until autovacuum (whose rounds are a
// minute apart, and busy with the large tables) gets to it. Then it
// catches up on the large tables (runs, tasks, events) where autovacuum
// has not: it may be off, or behind. A role that may not vacuum the
// tables (not their owner) gets an error for the small ones; Postgres
// skips the large ones with a warning. It also forgets the limit keys no
// task holds or waits for, and the rate keys at rest.
func (s *Store) Maintain(ctx context.Context, now time.Time) error {
	if err := s.q.LimitsForget(ctx); err != nil {
		return wrap(err, "forgetting idle limit keys")
	}
	// A minute's margin: the times in a key's row are those of the claims
	// that paced it, whose clocks may differ from the leader's a little.
	if err := s.q.RatesForget(ctx, now.Add(-time.Minute)); err != nil {
		return wrap(err, "forgetting rate keys at rest")
	}
	tables, err := s.q.HotTablesToVacuum(ctx, vacuumAfter)
	if err != nil {
		return wrap(err, "reading table statistics")
	}
	if len(tables) > 0 {
		// Not in sqlc: VACUUM's tables are identifiers, which no query parameter can be.
		if _, err := s.pool.Exec(ctx, `VACUUM (SKIP_LOCKED) `+strings.Join(tables, ", ")); err != nil {
			return wrap(err, "vacuuming "+strings.Join(tables, ", "))
		}
	}
	return s.catchUp(ctx)
}

// catchUp analyzes the large tables whose statistics are stale, and
// vacuums those with many dead rows, when autovacuum has not (see
// TablesBehind): throttled as autovacuum throttles itself, so that the
// engine's statements keep their share of the disk. Plans depend on the
// statistics (a burst of runs never analyzed makes the queue look empty or
// huge), and scans on the dead rows and index entries vacuum removes.
func (s *Store) catchUp(ctx context.Context) error {
	behind, err := s.q.TablesBehind(ctx)
	if err != nil {
		return wrap(err, "reading table statistics")
	}
	for _, t := range behind {
		var stmt string
		switch {
		case t.Vacuum:
			stmt = `VACUUM (SKIP_LOCKED, ANALYZE) `
		case t.Analyze:
			stmt = `ANALYZE (SKIP_LOCKED) `
		default:
			continue
		}
		stmt += pgx.Identifier{t.Name}.Sanitize()
		err := s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
			if _, err := c.Exec(ctx, `SET vacuum_cost_delay = '2ms'`); err != nil {
				return err
			}
			_, err := c.Exec(ctx, stmt)
			if _, rerr := c.Exec(ctx, `RESET vacuum_cost_delay`); err == nil {
				err = rerr
			}
			return err
		})
		if err != nil {
			return wrap(err, strings.ToLower(strings.Fields(stmt)[0])+" "+t.Name)
		}
	}
	return nil
}

// FireRunTimers implements store.Timers: the due run timers, then their
// runs (skipping those another transaction holds, as FireTimers does),
// in one transaction. Starts queue the roots of the runs still running
// and set their deadlines; deadlines fail the runs still running as a
// step's failure fails them (fail).
func (s *Store) FireRunTimers(ctx context.Context, now time.Time, limit int) ([]store.FiredRunTimer, error) {
	if limit <= 0 {
		limit = 1000
	}
	var fired []store.FiredRunTimer
	err := s.inTx(ctx, func(q *dbsqlc.Queries) error {
		fired = nil
		due, err := q.RunTimersDue(ctx, dbsqlc.RunTimersDueParams{Now: now, Lim: int32(limit)})
		if err != nil || len(due) == 0 {
			return err
		}
		ids := make([]uuid.UUID, len(due))
		for i, d := range due {
			ids[i] = d.RunID
		}
		locked, err := q.TimersLockRuns(ctx, ids)
		if err != nil || len(locked) == 0 {
			return err
		}
		held := make(map[uuid.UUID]bool, len(locked))
		for _, id := range locked {
			held[id] = true
		}
		var firing, starts []uuid.UUID
		fail := dbsqlc.RunsFailParams{Now: now}
		timers := make(map[uuid.UUID]dbsqlc.TrellisRunTimer, len(locked))
		for _, d := range due {
			if !held[d.RunID] {
				continue
			}
			firing = append(firing, d.RunID)
			timers[d.RunID] = d
			if d.Start {
				starts = append(starts, d.RunID)
				continue
			}
			fail.RunIds = append(fail.RunIds, d.RunID)
			fail.Steps = append(fail.Steps, -1)
			fail.Errors = append(fail.Errors, store.DeadlineError(time.Duration(d.Timeout)*time.Microsecond))
		}
		if err := q.RunTimersDelete(ctx, firing); err != nil {
			return err
		}
		if fired, err = startRuns(ctx, q, starts, timers, now); err != nil {
			return err
		}
		if len(fail.RunIds) == 0 {
			return nil
		}
		failed, err := q.RunsFail(ctx, fail)
		if err != nil || len(failed) == 0 {
			return err
		}
		runs := make([]uuid.UUID, len(failed))
		for i, f := range failed {
			runs[i] = f.ID
			fired = append(fired, store.FiredRunTimer{ID: f.ID, Workflow: f.Workflow, Tenant: f.Tenant, Due: timers[f.ID].WakeAt})
		}
		if err := cancelUnfinished(ctx, q, runs, false, now, store.DeadlineDetail); err != nil {
			return err
		}
		_, err = q.TasksQueueHandlers(ctx, dbsqlc.TasksQueueHandlersParams{Now: now, RunIds: runs})
		return err
	})
	if err != nil {
		return nil, wrap(err, "firing run timers")
	}
	return fired, nil
}

// startRuns starts the delayed runs of ids still running, whose timers
// the caller has deleted and whose locks it holds: their roots are
// queued, and those with a timeout get their deadline.
func startRuns(ctx context.Context, q *dbsqlc.Queries, ids []uuid.UUID, timers map[uuid.UUID]dbsqlc.TrellisRunTimer, now time.Time) ([]store.FiredRunTimer, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	started, err := q.RunsStart(ctx, dbsqlc.RunsStartParams{RunIds: ids, Now: now})
	if err != nil {
		return nil, err
	}
	var fired []store.FiredRunTimer
	var deadlines dbsqlc.RunTimersSetParams
	for _, r := range started {
		tm := timers[r.ID]
		fired = append(fired, store.FiredRunTimer{ID: r.ID, Workflow: r.Workflow, Tenant: r.Tenant, Started: true, Due: tm.WakeAt})
		if tm.Timeout > 0 {
			deadlines.RunIds = append(deadlines.RunIds, r.ID)
			deadlines.WakeAts = append(deadlines.WakeAts, now.Add(time.Duration(tm.Timeout)*time.Microsecond))
			deadlines.Starts = append(deadlines.Starts, false)
			deadlines.Timeouts = append(deadlines.Timeouts, tm.Timeout)
		}
	}
	if len(deadlines.RunIds) > 0 {
		if err := q.RunTimersSet(ctx, deadlines); err != nil {
			return nil, err
		}
	}
	return fired, nil
}
