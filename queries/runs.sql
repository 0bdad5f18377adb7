-- name: RunInsert :one
-- Creates a run, unless another run of the workflow and tenant holds the
-- idempotency key: then no row is returned.
INSERT INTO trellis_runs (id, workflow, version, tenant, idempotency_key, status, input, unresolved, created_at)
VALUES (@id, @workflow, @version, @tenant, sqlc.narg('idempotency_key'), 'RUNNING', @input, @unresolved, @now)
ON CONFLICT (workflow, tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: RunByIdempotencyKey :one
SELECT id FROM trellis_runs
WHERE workflow = @workflow AND tenant = @tenant AND idempotency_key = @idempotency_key;

-- name: RunsLock :exec
-- Locks runs' rows in id order: the first step of every transaction that
-- changes tasks of existing runs (see the lock order in the schema).
SELECT id FROM trellis_runs WHERE id = ANY (@ids::uuid[]) ORDER BY id FOR NO KEY UPDATE;

-- name: RunGet :one
SELECT id, workflow, version, tenant, idempotency_key, status, input, failed_step, error, created_at, finished_at
FROM trellis_runs
WHERE id = @id;

-- name: RunCancel :one
-- Moves a running run to CANCELLED; no row when it was not running.
UPDATE trellis_runs
SET status = 'CANCELLED', finished_at = @now::timestamptz
WHERE id = @id AND status = 'RUNNING'
RETURNING id;

-- name: RunExists :one
SELECT EXISTS (SELECT 1 FROM trellis_runs WHERE id = @id);

-- name: RunReopen :one
-- Moves a failed or cancelled run back to RUNNING; no row otherwise.
UPDATE trellis_runs
SET status = 'RUNNING', failed_step = -1, error = NULL, finished_at = NULL
WHERE id = @id AND status IN ('FAILED', 'CANCELLED')
RETURNING id;

-- name: RunRecount :exec
-- Recomputes how many tasks of a run are unresolved.
UPDATE trellis_runs r
SET unresolved = (
    SELECT count(*) FROM trellis_tasks t
    WHERE t.run_id = r.id AND t.kind <> 2 AND t.status NOT IN ('COMPLETED', 'SKIPPED')
)
WHERE r.id = @id;

-- name: RunsFail :many
-- Fails running runs, recording the step that failed each and its error,
-- and wakes listeners. Returns the runs that were running.
WITH failed AS (
    UPDATE trellis_runs r
    SET status = 'FAILED', failed_step = f.step, error = f.error, finished_at = @now::timestamptz
    FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::int[]) AS step, unnest(@errors::text[]) AS error) AS f
    WHERE r.id = f.run_id AND r.status = 'RUNNING'
    RETURNING r.id
)
SELECT id, pg_notify(trellis_channel(), 'finished ' || id::text)::text AS notified FROM failed;

-- name: RunNotifyFinished :exec
SELECT pg_notify(trellis_channel(), 'finished ' || CAST(@id::uuid AS text));
