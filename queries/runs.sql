-- name: RunsInsert :many
-- Creates runs, except those whose id exists (an earlier try of the same
-- call created them) or whose idempotency key another run of the workflow
-- and tenant holds. Rows are inserted in the order given: the caller
-- orders them by key, so that concurrent inserts with keys in common wait
-- on each other's keys in one order and never deadlock. Returns the ids
-- of the runs created. A run with a parent carries the parent run's tags,
-- merged under its own (NULL when there are none).
INSERT INTO trellis_runs (id, workflow, version, tenant, idempotency_key, priority, status, input, unresolved_sinks, trace_context, created_at,
                          parent_run_id, parent_step, parent_index, tags)
SELECT i.id, i.workflow, i.version, i.tenant, nullif(i.idempotency_key, ''), i.priority, 'RUNNING', i.input, i.unresolved_sinks,
       nullif(i.trace_context, ''), @now,
       nullif(i.parent_run_id, '00000000-0000-0000-0000-000000000000'),
       CASE WHEN i.parent_run_id <> '00000000-0000-0000-0000-000000000000' THEN i.parent_step END,
       CASE WHEN i.parent_run_id <> '00000000-0000-0000-0000-000000000000' THEN i.parent_index END,
       CASE WHEN i.parent_run_id = '00000000-0000-0000-0000-000000000000' THEN nullif(i.tags, '')::jsonb
            ELSE nullif(coalesce((SELECT p.tags FROM trellis_runs p WHERE p.id = i.parent_run_id), '{}'::jsonb)
                        || coalesce(nullif(i.tags, '')::jsonb, '{}'::jsonb), '{}'::jsonb)
       END
FROM (
    SELECT u.*, row_number() OVER () AS ord
    FROM (
        SELECT unnest(@ids::uuid[]) AS id, unnest(@workflows::text[]) AS workflow, unnest(@versions::text[]) AS version,
               unnest(@tenants::text[]) AS tenant, unnest(@idempotency_keys::text[]) AS idempotency_key,
               unnest(@priorities::smallint[]) AS priority, unnest(@inputs::json[]) AS input, unnest(@unresolved_sinks::int[]) AS unresolved_sinks,
               unnest(@trace_contexts::text[]) AS trace_context, unnest(@parent_run_ids::uuid[]) AS parent_run_id,
               unnest(@parent_steps::smallint[]) AS parent_step, unnest(@parent_indexes::int[]) AS parent_index,
               unnest(@tags::text[]) AS tags
    ) AS u
) AS i
ORDER BY i.ord
ON CONFLICT DO NOTHING
RETURNING id;

-- name: RunsExisting :many
-- Those of the given run ids that exist.
SELECT id FROM trellis_runs WHERE id = ANY (@ids::uuid[]);

-- name: RunsByIdempotencyKey :many
-- The runs holding the given idempotency keys.
SELECT r.id, r.workflow, r.tenant, r.idempotency_key::text AS idempotency_key
FROM trellis_runs r
JOIN (
    SELECT unnest(@workflows::text[]) AS workflow, unnest(@tenants::text[]) AS tenant, unnest(@keys::text[]) AS key
) AS i ON r.workflow = i.workflow AND r.tenant = i.tenant AND r.idempotency_key = i.key;

-- name: RunsLock :exec
-- Locks runs' rows in id order: the first step of every transaction that
-- changes tasks of existing runs (see the lock order in the schema).
SELECT id FROM trellis_runs WHERE id = ANY (@ids::uuid[]) ORDER BY id FOR NO KEY UPDATE;

-- name: RunGet :one
SELECT id, workflow, version, tenant, idempotency_key, priority, status, input, failed_step, error, created_at, finished_at,
       coalesce(trace_context, '')::text AS trace_context,
       parent_run_id, parent_step, parent_index, rerun_at, tags, start_at, deadline,
       (limit_key IS NOT NULL)::boolean AS limited
FROM trellis_runs
WHERE id = @id;

-- name: RunLimitAdmit :one
-- Gives a new run a slot of its run limit's key, or says what its
-- strategy wants done (see trellis_run_limit_admit).
SELECT decision::text AS decision, coalesce(others, '{}')::uuid[] AS others
FROM trellis_run_limit_admit(@run_id::uuid, @key::text, @max::integer, @strategy::text);

-- name: RunsStatus :many
-- The status of each of the given runs that exists.
SELECT id, status FROM trellis_runs WHERE id = ANY (@ids::uuid[]);

-- name: RunsGet :many
-- The given runs that exist, ordered by id.
SELECT id, workflow, version, tenant, idempotency_key, priority, status, input, failed_step, error, created_at, finished_at,
       coalesce(trace_context, '')::text AS trace_context,
       parent_run_id, parent_step, parent_index, rerun_at, tags, start_at, deadline,
       (limit_key IS NOT NULL)::boolean AS limited
FROM trellis_runs
WHERE id = ANY (@ids::uuid[])
ORDER BY id;

-- name: RunsCancel :many
-- Moves the running runs of ids to CANCELLED and wakes their listeners.
-- Lock them first (RunsLock). Returns the runs that were running.
-- The runs are read by key and their status tested after: a test of
-- status in the scan could be planned as a read of every running run
-- through the status index, which stale statistics make look cheap.
WITH target AS MATERIALIZED (
    SELECT id, status FROM trellis_runs WHERE id = ANY (@ids::uuid[])
), cancelled AS (
    UPDATE trellis_runs r
    SET status = 'CANCELLED', finished_at = @now::timestamptz
    FROM target t
    WHERE r.id = t.id AND t.status = 'RUNNING'
    RETURNING r.id, r.workflow, r.tenant
)
SELECT id, workflow, tenant, pg_notify(trellis_channel(), 'finished ' || id::text)::text AS notified
FROM cancelled ORDER BY id;

-- name: RunExists :one
SELECT EXISTS (SELECT 1 FROM trellis_runs WHERE id = @id);

-- name: RunsReopen :many
-- Moves the failed and cancelled runs of ids back to RUNNING, and the
-- completed ones of rerun_ids (a rerun from a step). Lock them first
-- (RunsLock). Returns the runs it moved.
-- The runs are read by key and their status tested after (see RunsCancel).
WITH target AS MATERIALIZED (
    SELECT id, status FROM trellis_runs WHERE id = ANY (@ids::uuid[])
), reopened AS (
    UPDATE trellis_runs r
    SET status = 'RUNNING', failed_step = -1, error = NULL, finished_at = NULL,
        rerun_at = CASE WHEN t.id = ANY (@rerun_ids::uuid[]) THEN @now::timestamptz ELSE r.rerun_at END
    FROM target t
    WHERE r.id = t.id AND (t.status IN ('FAILED', 'CANCELLED')
                           OR (t.status = 'COMPLETED' AND t.id = ANY (@rerun_ids::uuid[])))
    RETURNING r.id
)
SELECT id FROM reopened ORDER BY id;

-- name: RunsRecount :exec
-- Recomputes how many sinks of each run of ids are unresolved, marking
-- its sinks first (a run finished before schema/0014 has none marked).
WITH marked AS (
    UPDATE trellis_tasks t
    SET sink = true
    WHERE t.run_id = ANY (@ids::uuid[]) AND NOT t.sink AND t.kind <> trellis_kind_on_failure()
      AND NOT EXISTS (SELECT 1 FROM trellis_tasks c WHERE c.run_id = t.run_id AND t.step = ANY (c.parents))
    RETURNING t.run_id, t.status
)
UPDATE trellis_runs r
SET unresolved_sinks = (
    SELECT count(*) FROM trellis_tasks t
    WHERE t.run_id = r.id AND t.sink AND t.status NOT IN ('COMPLETED', 'SKIPPED')
) + (
    -- This statement does not see the sinks it marked.
    SELECT count(*) FROM marked m WHERE m.run_id = r.id AND m.status NOT IN ('COMPLETED', 'SKIPPED')
)
WHERE r.id = ANY (@ids::uuid[]);

-- name: RunsFail :many
-- Fails running runs, recording the step that failed each and its error,
-- and wakes listeners. Returns the runs that were running.
-- Lock them first (RunsLock). The runs are read by key and their status
-- tested after (see RunsCancel).
WITH target AS MATERIALIZED (
    SELECT id, status FROM trellis_runs WHERE id = ANY (@run_ids::uuid[])
), failed AS (
    UPDATE trellis_runs r
    SET status = 'FAILED', failed_step = f.step, error = f.error, finished_at = @now::timestamptz
    FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::int[]) AS step, unnest(@errors::text[]) AS error) AS f
    JOIN target t ON t.id = f.run_id AND t.status = 'RUNNING'
    WHERE r.id = f.run_id
    RETURNING r.id, r.workflow, r.tenant
)
SELECT id, workflow, tenant, pg_notify(trellis_channel(), 'finished ' || id::text)::text AS notified FROM failed;


-- name: RunsChildren :many
-- The runs started by a task, in index order and then by creation.
SELECT id, workflow, version, tenant, idempotency_key, priority, status, input, failed_step, error, created_at, finished_at,
       coalesce(trace_context, '')::text AS trace_context,
       parent_run_id, parent_step, parent_index, rerun_at, tags, start_at, deadline,
       (limit_key IS NOT NULL)::boolean AS limited
FROM trellis_runs
WHERE parent_run_id = @run_id::uuid AND parent_step = @step::smallint
ORDER BY parent_index, created_at, id;

-- name: TasksOfChildren :many
-- The tasks of the runs started by a task, by run and step.
SELECT t.run_id, t.step, t.kind, t.status, t.attempt, t.output, t.error, t.worker, t.wake_at, t.updated_at, t.finished_at
FROM trellis_runs r
JOIN trellis_tasks t ON t.run_id = r.id
WHERE r.parent_run_id = @run_id::uuid AND r.parent_step = @step::smallint
ORDER BY t.run_id, t.step;

-- name: RunsWaitingByWorkflow :many
-- How many runs wait for a slot of their run limit's key or for their
-- debounce window, by workflow (schema/0023): a read of the lines, which
-- hold only waiting runs.
SELECT r.workflow, count(*)::int AS n
FROM trellis_run_waiting w
JOIN trellis_runs r ON r.id = w.run_id
GROUP BY r.workflow;

-- name: RunDebounce :one
-- Makes a new run the one its debounce key waits for, and returns the
-- runs it supersedes (see trellis_run_limit_debounce).
SELECT trellis_run_limit_debounce(@run_id::uuid, @key::text, @window_us::bigint, @max_wait_us::bigint, @now::timestamptz)::uuid[] AS superseded;

-- name: RunsDebounceFire :one
-- Lets in up to lim debounced runs due at now (see trellis_run_limit_fire).
SELECT trellis_run_limit_fire(@now::timestamptz, @lim::integer)::int AS n;

-- name: RunsWaitingOf :many
-- Which of the given runs (those with a run limit or a debounce) wait in
-- trellis_run_waiting, and until when a debounced one waits: read apart
-- from the runs, only for runs that may wait (schema/0022), so that the
-- listings' plans do not change.
SELECT run_id, due_at FROM trellis_run_waiting WHERE run_id = ANY (@ids::uuid[]);
