-- name: LeasesHeartbeat :many
-- Refreshes the worker's leases; returns those it still holds.
UPDATE trellis_leases l
SET heartbeat_at = @now
FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt) AS k
WHERE l.run_id = k.run_id AND l.step = k.step AND l.attempt = k.attempt AND l.worker = @worker
RETURNING l.run_id, l.step, l.attempt;

-- name: LeasesStale :many
-- Locks up to lim leases whose heartbeat is older than stale_before, with
-- what recovering their tasks needs.
SELECT l.run_id, l.step, l.attempt, l.worker, t.kind, t.max_attempts, t.prior_attempts, t.wake_at
FROM trellis_leases l
JOIN trellis_tasks t ON t.run_id = l.run_id AND t.step = l.step
WHERE l.heartbeat_at < @stale_before AND t.status = 'RUNNING' AND t.attempt = l.attempt
ORDER BY l.heartbeat_at, l.run_id, l.step
LIMIT @lim
FOR UPDATE OF l SKIP LOCKED;

-- name: LeasesRequeue :one
-- Queues recovered tasks again (woken sleep tasks to be completed) and
-- drops their leases. Returns how many were queued.
WITH input AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step,
           unnest(@attempts::int[]) AS attempt, unnest(@wakes::boolean[]) AS wake, unnest(@details::text[]) AS detail
), requeued AS (
    UPDATE trellis_tasks t
    SET status = 'QUEUED', updated_at = @now
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
    RETURNING t.run_id, t.step, t.attempt, i.wake, i.detail
), released AS (
    DELETE FROM trellis_leases l USING requeued r WHERE l.run_id = r.run_id AND l.step = r.step
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'RETRYING', attempt, @now, detail FROM requeued
    UNION ALL
    SELECT run_id, step, 'QUEUED', attempt, @now, NULL FROM requeued
)
SELECT trellis_enqueue(array_agg(run_id), array_agg(step), array_agg(wake))::bigint FROM requeued;
