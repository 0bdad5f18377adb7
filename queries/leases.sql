-- name: WorkerHeartbeat :exec
-- Records that a worker is alive.
INSERT INTO trellis_workers (worker, heartbeat_at) VALUES (@worker, @now)
ON CONFLICT (worker) DO UPDATE SET heartbeat_at = greatest(trellis_workers.heartbeat_at, excluded.heartbeat_at);

-- name: WorkerAnnounce :exec
-- Records the workflow versions a worker registered, its labels, and that
-- it is alive.
INSERT INTO trellis_workers (worker, heartbeat_at, versions, labels) VALUES (@worker, @now, @versions::text[], @labels::text[])
ON CONFLICT (worker) DO UPDATE SET heartbeat_at = greatest(trellis_workers.heartbeat_at, excluded.heartbeat_at),
    versions = excluded.versions, labels = excluded.labels;

-- name: LeasesOf :many
-- The leases a worker holds.
SELECT run_id, step, attempt, claimed_at FROM trellis_leases WHERE worker = @worker;

-- name: LeasesStaleRuns :many
-- The runs of stale leases: claimed before stale_before by a worker that
-- has not heartbeated since.
SELECT DISTINCT l.run_id
FROM trellis_leases l
LEFT JOIN trellis_workers w ON w.worker = l.worker
WHERE l.claimed_at < @stale_before AND coalesce(w.heartbeat_at, '-infinity') < @stale_before
LIMIT @lim;

-- name: LeasesStale :many
-- Locks the stale leases of the given (already locked) runs, with what
-- recovering their tasks needs.
SELECT l.run_id, l.step, l.attempt, l.worker, t.kind, t.max_attempts, t.prior_attempts, t.wake_at
FROM trellis_leases l
JOIN trellis_tasks t ON t.run_id = l.run_id AND t.step = l.step
LEFT JOIN trellis_workers w ON w.worker = l.worker
WHERE l.run_id = ANY (@run_ids::uuid[])
  AND l.claimed_at < @stale_before AND coalesce(w.heartbeat_at, '-infinity') < @stale_before
  AND t.status = 'RUNNING' AND t.attempt = l.attempt
ORDER BY l.claimed_at, l.run_id, l.step
FOR UPDATE OF l;

-- name: WorkersForget :exec
-- Forgets workers that hold no lease and have not heartbeated since
-- stale_before.
DELETE FROM trellis_workers w
WHERE w.heartbeat_at < @stale_before
  AND NOT EXISTS (SELECT 1 FROM trellis_leases l WHERE l.worker = w.worker);

-- name: LeasesRequeue :one
-- Queues recovered tasks again (woken sleep tasks to be completed) and
-- drops their leases. Returns how many were queued.
WITH input AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step,
           unnest(@attempts::int[]) AS attempt, unnest(@wakes::boolean[]) AS wake, unnest(@details::text[]) AS detail
), requeued AS (
    UPDATE trellis_tasks t
    SET status = 'QUEUED', updated_at = greatest(@now::timestamptz, t.updated_at)
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
    RETURNING t.run_id, t.step, t.attempt, i.wake, i.detail, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING requeued r WHERE l.run_id = r.run_id AND l.step = r.step
), events AS (
    -- The retry is immediate: the task is queued again when it says so.
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail, wake_at)
    SELECT run_id, step, 'RETRYING', attempt, at, detail, at FROM requeued
    UNION ALL
    SELECT run_id, step, 'QUEUED', attempt, at, NULL, NULL FROM requeued
)
SELECT trellis_enqueue(array_agg(q.run_id), array_agg(q.step), array_agg(q.wake), array_agg(r.tenant), array_agg(r.workflow), array_agg(trellis_lane(r.priority, true)))::bigint
FROM requeued q JOIN trellis_runs r ON r.id = q.run_id;

-- name: LeasesRelease :many
-- Hands tasks a worker holds back to the ready queue (woken tasks to be
-- completed) without counting the attempt against the retry budget,
-- and drops their leases. The caller holds the runs' locks. Returns the
-- tasks released.
WITH input AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt
), released AS (
    UPDATE trellis_tasks t
    SET status = 'QUEUED', updated_at = greatest(@now::timestamptz, t.updated_at),
        prior_attempts = t.prior_attempts + CASE WHEN trellis_woken(t.kind, t.wake_at) THEN 0 ELSE 1 END
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
      AND t.worker = @worker::text
    RETURNING t.run_id, t.step, t.attempt, trellis_woken(t.kind, t.wake_at) AS wake, t.updated_at AS at
), dropped AS (
    DELETE FROM trellis_leases l USING released r WHERE l.run_id = r.run_id AND l.step = r.step
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'QUEUED', attempt, at, nullif(@reason::text, '') FROM released
), queued AS (
    SELECT trellis_enqueue(array_agg(q.run_id), array_agg(q.step), array_agg(q.wake), array_agg(r.tenant), array_agg(r.workflow), array_agg(trellis_lane(r.priority, true))) AS n
    FROM released q JOIN trellis_runs r ON r.id = q.run_id
)
SELECT run_id, step, attempt FROM released WHERE (SELECT n FROM queued) >= 0;

-- name: LeasesHeld :many
-- Locks the given leases of a worker whose tasks are still RUNNING in
-- those attempts, with what ending the attempts needs. The caller holds
-- the runs' locks.
SELECT l.run_id, l.step, l.attempt, l.worker, t.kind, t.max_attempts, t.prior_attempts, t.wake_at
FROM trellis_leases l
JOIN trellis_tasks t ON t.run_id = l.run_id AND t.step = l.step
JOIN (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt) AS i
    ON i.run_id = l.run_id AND i.step = l.step AND i.attempt = l.attempt
WHERE l.worker = @worker AND t.status = 'RUNNING' AND t.attempt = l.attempt
ORDER BY l.run_id, l.step
FOR UPDATE OF l;
