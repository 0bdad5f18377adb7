-- name: RunTimersSet :exec
-- Sets run timers (see schema/0022): a delayed run's start, or a run's
-- deadline, and the run's start_at or deadline column with it; tells the
-- leader to look at its next timer again (a 'timer' notification).
WITH d AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@wake_ats::timestamptz[]) AS wake_at,
           unnest(@starts::boolean[]) AS start, unnest(@timeouts::bigint[]) AS timeout
), timers AS (
    INSERT INTO trellis_run_timers (run_id, wake_at, start, timeout)
    SELECT run_id, wake_at, start, timeout FROM d
    ON CONFLICT (run_id) DO UPDATE SET wake_at = excluded.wake_at, start = excluded.start, timeout = excluded.timeout
), notified AS (
    SELECT pg_notify(trellis_channel(), 'timer')
)
UPDATE trellis_runs r
SET start_at = CASE WHEN d.start THEN d.wake_at ELSE r.start_at END,
    deadline = CASE WHEN d.start THEN r.deadline ELSE d.wake_at END
FROM d WHERE r.id = d.run_id AND (SELECT count(*) FROM notified) >= 0;

-- name: RunTimersDue :many
-- Locks up to lim run timers due at now, skipping those locked
-- elsewhere, earliest first, for the rest of FireRunTimers in the same
-- transaction.
SELECT run_id, wake_at, start, timeout
FROM trellis_run_timers
WHERE wake_at <= @now
ORDER BY wake_at
LIMIT @lim
FOR UPDATE SKIP LOCKED;

-- name: RunTimersDelete :exec
-- Deletes the given run timers, which the caller has locked
-- (RunTimersDue): they fired.
DELETE FROM trellis_run_timers WHERE run_id = ANY (@run_ids::uuid[]);

-- name: RunTimerNext :one
-- When the earliest run timer is due; no row when there is none.
SELECT wake_at FROM trellis_run_timers ORDER BY wake_at LIMIT 1;

-- name: RunsStart :many
-- Starts delayed runs whose start is due, which the caller has locked
-- (TimersLockRuns): the roots of each that is still RUNNING (not
-- cancelled meanwhile) are queued, as TasksInsert queues the roots of a
-- run started at once, under their limits (trellis_admit). Returns the
-- runs started: not those whose roots were queued already (a run
-- cancelled before its start, then retried, started when retried).
WITH target AS MATERIALIZED (
    SELECT id, tenant, workflow, priority FROM trellis_runs WHERE id = ANY (@run_ids::uuid[]) AND status = 'RUNNING'
), roots AS (
    UPDATE trellis_tasks t
    SET status = 'QUEUED', pending = 0, updated_at = greatest(@now::timestamptz, t.updated_at)
    FROM target r
    WHERE t.run_id = r.id AND t.status = 'PENDING' AND t.parents = '{}' AND t.kind <> trellis_kind_on_failure()
    RETURNING t.run_id, t.step, r.tenant, r.workflow, trellis_lane(r.priority, false) AS lane, t.limit_key, t.limit_max, t.updated_at AS at
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'QUEUED', 0, at, 'run started' FROM roots
), admitted AS (
    SELECT trellis_admit(array_agg(run_id), array_agg(step), array_agg(tenant), array_agg(workflow), array_agg(lane),
                         array_agg(limit_key), array_agg(limit_max))::bigint AS n
    FROM roots
)
SELECT t.id, t.workflow, t.tenant FROM target t
WHERE t.id IN (SELECT run_id FROM roots) AND (SELECT n FROM admitted) >= 0
ORDER BY t.id;
