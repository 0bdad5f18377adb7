-- name: TimersDue :many
-- Locks up to lim timers due at now, and their tasks, skipping those
-- locked elsewhere, for TimersFire in the same transaction. The task is
-- locked now, never waited for: a transaction that holds it may wait for
-- its timer (an event waking the task deletes the timer), and waiting
-- for it while holding the timer would deadlock.
SELECT m.run_id, m.step
FROM trellis_timers m
JOIN trellis_tasks t ON t.run_id = m.run_id AND t.step = m.step
WHERE m.wake_at <= @now
ORDER BY m.wake_at
LIMIT @lim
FOR UPDATE OF m SKIP LOCKED
FOR NO KEY UPDATE OF t SKIP LOCKED;

-- name: TimersLockRuns :many
-- Locks those of the runs of due timers that no other transaction holds,
-- in id order, and returns them. It never waits: the caller holds timers
-- already, and a transaction that holds a run (cancelling it, say) may
-- wait for that run's timers. A busy run's timers are left for the next
-- round.
SELECT id FROM trellis_runs WHERE id = ANY (@ids::uuid[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED;

-- name: TimersFire :many
-- Fires the given timers, which the caller has locked (TimersDue), as
-- their runs (TimersLockRuns): a sleep step (kind sleep) that slept is
-- woken and left RUNNING, to be completed in the same transaction
-- (TasksComplete, with the children it returns); another sleeping task
-- is woken and queued to be completed by a worker; a retrying task is
-- queued for its next attempt; a task put off by its rate limit (QUEUED,
-- see trellis_pace) is queued for its turn; a waiting task whose deadline
-- passed wakes (its wait row goes; see schema/0013) and is queued. Returns
-- the timers that fired, with when each was due.
WITH due AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step
), fired AS (
    -- run_id = ANY (...) lets the primary key find the rows; a plain join
    -- would be planned as a scan of every timer, and so would the array
    -- given as such: a custom plan sees a thousand ids and prices a scan
    -- below a thousand lookups (10 ms against 3 with 100,000 timers set).
    DELETE FROM trellis_timers m
    WHERE m.run_id = ANY (ARRAY(SELECT run_id FROM due))
      AND (m.run_id, m.step) IN (SELECT run_id, step FROM due)
    RETURNING m.run_id, m.step, m.wake_at
), woken AS (
    -- before is the task as it was: a SLEEPING one wakes, a RETRYING one
    -- is queued for its next attempt (no longer woken, so its wake time
    -- goes), a QUEUED one (put off) for its turn, a WAITING one (its
    -- deadline passed) wakes at its deadline.
    UPDATE trellis_tasks t
    SET status = CASE WHEN before.status = 'SLEEPING' AND t.kind = trellis_kind_sleep() THEN 'RUNNING' ELSE 'QUEUED' END,
        updated_at = greatest(@now::timestamptz, t.updated_at),
        rate_turn = CASE WHEN before.status = 'QUEUED' THEN true END,
        awaiting = NULL,
        wake_at = CASE before.status WHEN 'RETRYING' THEN NULL WHEN 'WAITING' THEN f.wake_at ELSE t.wake_at END
    FROM fired f
    JOIN trellis_tasks before ON before.run_id = f.run_id AND before.step = f.step
    WHERE t.run_id = f.run_id AND t.step = f.step AND t.status IN ('SLEEPING', 'RETRYING', 'QUEUED', 'WAITING')
    RETURNING t.run_id, t.step, t.attempt, before.status IN ('SLEEPING', 'WAITING') AS wake, before.status = 'QUEUED' AS turn,
              before.status = 'WAITING' AS deadline, before.status = 'SLEEPING' AND t.kind = trellis_kind_sleep() AS complete,
              t.updated_at AS at, f.wake_at AS due
), turns AS (
    -- Tasks queued for their turn are in the ready queue's count now.
    DELETE FROM trellis_paced p
    WHERE p.run_id = ANY (ARRAY(SELECT run_id FROM woken WHERE turn))
      AND (p.run_id, p.step) IN (SELECT run_id, step FROM woken WHERE turn)
), waits AS (
    DELETE FROM trellis_event_waits x
    WHERE x.run_id = ANY (ARRAY(SELECT run_id FROM woken WHERE deadline))
      AND (x.run_id, x.step) IN (SELECT run_id, step FROM woken WHERE deadline)
), events AS (
    -- A turn is not an event: the task was queued already.
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, CASE WHEN wake THEN 'WOKEN' ELSE 'QUEUED' END, attempt, at,
           CASE WHEN deadline THEN 'timed out' END
    FROM woken WHERE NOT turn
), queued AS (
    SELECT trellis_enqueue(array_agg(k.run_id), array_agg(k.step), array_agg(k.wake), array_agg(r.tenant), array_agg(r.workflow), array_agg(trellis_lane(r.priority, true))) AS n
    FROM woken k JOIN trellis_runs r ON r.id = k.run_id
    WHERE NOT k.complete
)
-- queued is read through a scalar subquery, which runs once: joined, it
-- could run once per woken task. The children of a sleep step to
-- complete are the tasks that name it among their parents.
SELECT k.run_id, k.step, k.attempt, k.wake, coalesce(k.complete, false)::boolean AS complete, k.due,
       CASE WHEN k.complete THEN ARRAY(
           SELECT c.step FROM trellis_tasks c WHERE c.run_id = k.run_id AND k.step = ANY (c.parents) ORDER BY c.step
       ) ELSE '{}' END::smallint[] AS children,
       r.workflow, r.version, r.tenant
FROM woken k
JOIN trellis_runs r ON r.id = k.run_id
WHERE (SELECT n FROM queued) >= 0;

-- name: TimerNext :one
-- The next timer due: a task's, or a debounced run's (schema/0023).
-- No row when there is none.
SELECT n.wake_at::timestamptz AS wake_at
FROM (SELECT least((SELECT t.wake_at FROM trellis_timers t ORDER BY t.wake_at LIMIT 1),
                   (SELECT w.due_at FROM trellis_run_waiting w WHERE w.due_at IS NOT NULL ORDER BY w.due_at LIMIT 1)) AS wake_at) n
WHERE n.wake_at IS NOT NULL;
