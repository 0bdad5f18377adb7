package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The harness reads results from the schema's tables with plain SQL.

// unfinishedRuns counts runs still RUNNING.
func unfinishedRuns(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE status = 'RUNNING'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting unfinished runs: %w", err)
	}
	return n, nil
}

// walPosition returns the server's current write-ahead log position.
func walPosition(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var lsn string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return "", fmt.Errorf("reading the WAL position: %w", err)
	}
	return lsn, nil
}

// walSince returns how many bytes of write-ahead log the server wrote
// since from (a walPosition).
func walSince(ctx context.Context, pool *pgxpool.Pool, from string) (int64, error) {
	var n int64
	if err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, from).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the WAL position: %w", err)
	}
	return n, nil
}

// stallAfter is how long a case waits for the next task to change state
// before it gives up on its workers: longer than the engine's default
// StaleAfter, so that the leader has recovered the tasks of a worker that
// died, and far shorter than caseTimeout, so that a worker that cannot
// work (it fails every claim, say) is reported within minutes, not after
// the case's whole time.
const stallAfter = 2 * time.Minute

// stall is o.StallAfter, or stallAfter.
func (o Options) stall() time.Duration {
	if o.StallAfter > 0 {
		return o.StallAfter
	}
	return stallAfter
}

// errStalled is waitRunsDone's error when no task changed state for its
// stall limit.
var errStalled = errors.New("no task changed state")

// waitRunsDone polls until no run is RUNNING, or timeout; or, when stall
// is positive, until no task has changed state for stall (no event was
// written: every change of a task is one). Each poll asks only whether
// one run is: counting them all, every 25 ms of a burn-down, took a sixth
// of the database's time away from the workers being measured. The
// events' identity sequence tells progress without reading the table.
func waitRunsDone(ctx context.Context, pool *pgxpool.Pool, every, timeout, stall time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastEvent int64
	lastMoved := time.Now()
	for {
		var running bool
		var event int64
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM trellis_runs WHERE status = 'RUNNING'),
			coalesce(pg_sequence_last_value(pg_get_serial_sequence('trellis_events', 'id')), 0)`).Scan(&running, &event); err != nil {
			return fmt.Errorf("looking for unfinished runs: %w", err)
		}
		if !running {
			return nil
		}
		now := time.Now()
		if event != lastEvent {
			lastEvent, lastMoved = event, now
		}
		stalled := stall > 0 && now.Sub(lastMoved) >= stall
		if stalled || now.After(deadline) {
			n, err := unfinishedRuns(ctx, pool)
			if err != nil {
				return err
			}
			if stalled {
				return fmt.Errorf("%w for %v, with %d runs still running: the workers are stuck", errStalled, stall, n)
			}
			return fmt.Errorf("%d runs still running after %v", n, timeout)
		}
		if err := sleepCtx(ctx, every); err != nil {
			return err
		}
	}
}

// checkAllCompleted reports runs that did not complete (failed or
// cancelled ones mean the bench measured something else).
func checkAllCompleted(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT status, count(*) FROM trellis_runs WHERE status <> 'COMPLETED' GROUP BY status`)
	if err != nil {
		return fmt.Errorf("checking run statuses: %w", err)
	}
	defer rows.Close()
	var bad string
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return fmt.Errorf("checking run statuses: %w", err)
		}
		bad += fmt.Sprintf(" %d %s", n, status)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("checking run statuses: %w", err)
	}
	if bad != "" {
		return fmt.Errorf("runs that did not complete:%s", bad)
	}
	return nil
}

// window is the span of a burn-down: from the first STARTED event to the
// last COMPLETED one, with the number of COMPLETED events.
type window struct {
	first, last time.Time
	completed   int
}

func (w window) elapsed() time.Duration { return w.last.Sub(w.first) }

// burnWindow reads the burn-down window from the event log.
func burnWindow(ctx context.Context, pool *pgxpool.Pool) (window, error) {
	var w window
	var first, last *time.Time
	err := pool.QueryRow(ctx, `SELECT min(at) FILTER (WHERE type = 'STARTED'), max(at) FILTER (WHERE type = 'COMPLETED'),
		count(*) FILTER (WHERE type = 'COMPLETED') FROM trellis_event_log`).Scan(&first, &last, &w.completed)
	if err != nil {
		return w, fmt.Errorf("reading the burn-down window: %w", err)
	}
	if first == nil || last == nil {
		return w, fmt.Errorf("the event log holds no STARTED or no COMPLETED event")
	}
	w.first, w.last = *first, *last
	return w, nil
}

// countEvents counts events of a type with at in [from, to).
func countEvents(ctx context.Context, pool *pgxpool.Pool, typ string, from, to time.Time) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_event_log WHERE type = $1 AND at >= $2 AND at < $3`, typ, from, to).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting %s events: %w", typ, err)
	}
	return n, nil
}

// countFinishedRuns counts runs that finished in [from, to).
func countFinishedRuns(ctx context.Context, pool *pgxpool.Pool, from, to time.Time) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE finished_at >= $1 AND finished_at < $2`, from, to).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting finished runs: %w", err)
	}
	return n, nil
}

// runDurations returns how long each finished run of a workflow took,
// creation to end, for those that ended in [from, to).
func runDurations(ctx context.Context, pool *pgxpool.Pool, workflow string, from, to time.Time) ([]time.Duration, error) {
	rows, err := pool.Query(ctx, `SELECT (extract(epoch FROM finished_at - created_at) * 1e6)::bigint
		FROM trellis_runs
		WHERE workflow = $1 AND finished_at >= $2 AND finished_at < $3`, workflow, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading run durations: %w", err)
	}
	micros, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading run durations: %w", err)
	}
	out := make([]time.Duration, len(micros))
	for i, us := range micros {
		out[i] = time.Duration(us) * time.Microsecond
	}
	return out, nil
}

// loadTaskEvents reads the STARTED, COMPLETED and SKIPPED events of the
// runs of a workflow, grouped by run.
func loadTaskEvents(ctx context.Context, pool *pgxpool.Pool, workflow string) ([]taskEvent, error) {
	rows, err := pool.Query(ctx, `SELECT e.run_id, e.step, e.type <> 'STARTED', e.at
		FROM trellis_event_log e JOIN trellis_runs r ON r.id = e.run_id
		WHERE r.workflow = $1 AND e.type IN ('STARTED', 'COMPLETED', 'SKIPPED')
		ORDER BY e.run_id, e.id`, workflow)
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	defer rows.Close()
	var out []taskEvent
	for rows.Next() {
		var ev taskEvent
		var step int16
		if err := rows.Scan(&ev.run, &step, &ev.resolved, &ev.at); err != nil {
			return nil, fmt.Errorf("reading events: %w", err)
		}
		ev.step = int(step)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	return out, nil
}

// eventTime returns the time of a task's first event of a type.
func eventTime(ctx context.Context, pool *pgxpool.Pool, run uuid.UUID, step int, typ string) (time.Time, error) {
	var at time.Time
	err := pool.QueryRow(ctx, `SELECT at FROM trellis_event_log WHERE run_id = $1 AND step = $2 AND type = $3 ORDER BY id LIMIT 1`,
		run, step, typ).Scan(&at)
	if err != nil {
		return at, fmt.Errorf("reading the %s event of run %s: %w", typ, run, err)
	}
	return at, nil
}

// tableBytes sums pg_total_relation_size (rows, indexes, TOAST) over the
// schema's trellis tables.
func tableBytes(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'trellis\_%'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("measuring the tables: %w", err)
	}
	return n, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
