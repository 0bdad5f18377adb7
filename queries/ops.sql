-- name: OpsCustomPlans :exec
-- Makes the rest of the transaction plan each statement for its
-- parameters. OpsRunsScan's filters are optional: planned with the
-- values, an unused one folds away and a used one picks its index
-- (schema/0005); a generic plan, which a pooled connection adopts after a
-- few executions, would have to serve every combination with one scan.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true)::text AS mode;

-- name: OpsRunsScan :many
-- The next lim runs of a listing, newest first, from after the cursor
-- (after_created, after_id). Every filter is optional: an empty text or a
-- null time matches every run; top_level keeps the runs no step started,
-- through the partial index of schema/0016. With by_id, the runs whose
-- ids are from id_from to id_to (those that begin with a prefix a person
-- typed) come from the primary key's range. With finished_from and a status, the
-- index on (status, finished_at) of schema/0007 finds the runs, however
-- many older ones the status has. Run it under OpsCustomPlans. One status at
-- a time: an index is read in order for one status, not for several. Each
-- run comes with whether its input contains one of the documents (true
-- when there are none; no index covers inputs, so this checks the rows
-- the index yields), and its input only then, and only with with_input.
-- With tags (a jsonb object, '{}' for none), the runs carry those tags:
-- planned with the value, a filter on tags can read the GIN index of
-- schema/0019 and sort what it finds, when few runs carry the tags.
-- The scan reads lim runs whatever the documents match, so its cost is
-- bounded; the last row tells where to go on. A run with a run limit
-- says whether it waits for a slot (schema/0023).
WITH scanned AS (
    SELECT id, workflow, version, tenant, idempotency_key, priority, status, failed_step, error, created_at, finished_at, input,
           parent_run_id, parent_step, parent_index, rerun_at, tags, start_at, deadline, limit_key
    FROM trellis_runs
    WHERE (@workflow::text = '' OR workflow = @workflow::text)
      AND (@tenant::text = '' OR tenant = @tenant::text)
      AND (@status::text = '' OR status = @status::text)
      AND (@idempotency_key::text = '' OR idempotency_key = @idempotency_key::text)
      AND (sqlc.narg(created_from)::timestamptz IS NULL OR created_at >= sqlc.narg(created_from)::timestamptz)
      AND (sqlc.narg(created_to)::timestamptz IS NULL OR created_at < sqlc.narg(created_to)::timestamptz)
      AND (sqlc.narg(finished_from)::timestamptz IS NULL OR finished_at >= sqlc.narg(finished_from)::timestamptz)
      AND (@parent::uuid = '00000000-0000-0000-0000-000000000000' OR parent_run_id = @parent::uuid)
      AND (NOT @top_level::boolean OR parent_run_id IS NULL)
      AND (NOT @by_id::boolean OR id BETWEEN @id_from::uuid AND @id_to::uuid)
      AND (@tags::jsonb = '{}'::jsonb OR tags @> @tags::jsonb)
      AND (sqlc.narg(after_created)::timestamptz IS NULL
           OR (created_at, id) < (sqlc.narg(after_created)::timestamptz, @after_id::uuid))
    ORDER BY created_at DESC, id DESC
    LIMIT @lim
), checked AS (
    SELECT s.*, (cardinality(@input_contains::jsonb[]) = 0 OR s.input::jsonb @> ANY (@input_contains::jsonb[])) AS matched
    FROM scanned s
)
SELECT id, workflow, version, tenant, idempotency_key, priority, status, failed_step, error, created_at, finished_at,
       (CASE WHEN matched AND @with_input::boolean THEN input END)::json AS input, matched,
       parent_run_id, parent_step, parent_index, rerun_at, tags, start_at, deadline,
       (limit_key IS NOT NULL)::boolean AS limited
FROM checked
ORDER BY created_at DESC, id DESC;

-- name: OpsWorkers :many
-- The workers, with the leases each holds and whether it leads. The
-- leader holds, beside the leader's lock, an advisory lock named after
-- itself (leader_lock_prefix || worker; see AdvisoryTryLock): it is
-- listed in pg_locks while the leader's connection lives, and goes with
-- it, so what this reads cannot go stale. Sorted bytewise (COLLATE "C"),
-- as Go and the memory store sort, whatever the database's collation.
SELECT w.worker, w.heartbeat_at,
       (SELECT count(*) FROM trellis_leases l WHERE l.worker = w.worker)::int AS leases,
       EXISTS (
           SELECT 1
           FROM pg_catalog.pg_locks k
           CROSS JOIN LATERAL (
               SELECT hashtextextended(current_schema() || '.trellis.' || @leader_lock_prefix::text || w.worker, 0) AS key
           ) h
           WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1
             AND k.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
             AND k.classid = ((h.key >> 32) & 4294967295)::oid
             AND k.objid = (h.key & 4294967295)::oid
       ) AS leader,
       w.versions, w.labels
FROM trellis_workers w
ORDER BY w.worker COLLATE "C";

-- name: OpsUnserved :many
-- Queued tasks that need worker labels no live worker (heartbeat at or
-- after alive_since) has all of, by workflow and labels (store.Unserved).
-- Reads only the labelled entries of the ready queue (a partial index).
SELECT q.workflow, q.labels::text[] AS labels, count(*)::bigint AS tasks,
       min(t.updated_at)::timestamptz AS oldest_queued_at
FROM trellis_ready q
JOIN trellis_tasks t ON t.run_id = q.run_id AND t.step = q.step
WHERE q.labels IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM trellis_workers w WHERE w.heartbeat_at >= @alive_since AND q.labels <@ w.labels)
GROUP BY q.workflow, q.labels
ORDER BY count(*) DESC, q.workflow COLLATE "C", q.labels::text COLLATE "C"
LIMIT @lim;

-- name: OpsQueue :many
-- Per tenant and workflow with tasks queued or running: how many of each
-- (and of the queued, how many wait for a concurrency slot, and how many
-- for their turn under a rate limit), and when the head of the group's
-- queue (its smallest queue id, the next to be claimed) was queued. Reads
-- the ready queue, the concurrency lines, the tasks put off and the
-- leases, plus one task and one run per group, lease or task put off.
-- Sorted bytewise.
WITH groups AS (
    -- Tasks waiting for a slot of their concurrency limit (kind 1) or
    -- for their turn under a rate limit (kind 2) are queued too (with no
    -- queue id: the head is on the ready queue).
    SELECT q.tenant, q.workflow, count(*) AS n, count(*) FILTER (WHERE q.kind = 1) AS held,
           count(*) FILTER (WHERE q.kind = 2) AS paced, min(q.qid) AS head
    FROM (
        SELECT tenant, workflow, qid, 0 AS kind FROM trellis_ready
        UNION ALL
        SELECT tenant, workflow, NULL, 1 FROM trellis_waiting
        UNION ALL
        SELECT p.tenant, r.workflow, NULL, 2 FROM trellis_paced p JOIN trellis_runs r ON r.id = p.run_id
        UNION ALL
        -- The first steps of runs waiting for a run slot or their
        -- debounce window (schema/0023; kind 3: counted queued only).
        SELECT r.tenant, r.workflow, NULL, 3 FROM trellis_run_waiting w JOIN trellis_runs r ON r.id = w.run_id
        JOIN trellis_tasks t ON t.run_id = w.run_id AND t.status = 'QUEUED'
    ) q
    GROUP BY q.tenant, q.workflow
), queued AS (
    SELECT g.tenant, g.workflow, g.n, g.held, g.paced, (
        SELECT t.updated_at
        FROM trellis_ready h
        JOIN trellis_tasks t ON t.run_id = h.run_id AND t.step = h.step
        WHERE h.tenant = g.tenant AND h.qid = g.head AND h.workflow = g.workflow
        LIMIT 1
    ) AS head_queued_at
    FROM groups g
), running AS (
    SELECT l.tenant, r.workflow, count(*) AS n
    FROM trellis_leases l
    JOIN trellis_runs r ON r.id = l.run_id
    GROUP BY l.tenant, r.workflow
)
SELECT coalesce(q.tenant, g.tenant)::text AS tenant, coalesce(q.workflow, g.workflow)::text AS workflow,
       coalesce(q.n, 0)::int AS queued, coalesce(g.n, 0)::int AS running, coalesce(q.held, 0)::int AS held,
       coalesce(q.paced, 0)::int AS paced,
       q.head_queued_at AS oldest_queued_at
FROM queued q
FULL JOIN running g ON g.tenant = q.tenant AND g.workflow = q.workflow
ORDER BY coalesce(q.tenant, g.tenant) COLLATE "C", coalesce(q.workflow, g.workflow) COLLATE "C";

-- name: OpsQueueSteps :many
-- One tenant's queued tasks of one workflow, per workflow version and
-- step: how many, how many wait for a concurrency slot (kind 1) or their
-- turn under a rate limit (kind 2), and when the oldest was queued. Reads
-- the tenant's ready queue (its index), concurrency lines and tasks put
-- off, and a run and a task per queued task. Sorted bytewise.
WITH q AS (
    SELECT rd.run_id, rd.step, 0 AS kind FROM trellis_ready rd WHERE rd.tenant = @tenant::text AND rd.workflow = @workflow::text
    UNION ALL
    SELECT w.run_id, w.step, 1 FROM trellis_waiting w WHERE w.tenant = @tenant::text AND w.workflow = @workflow::text
    UNION ALL
    SELECT p.run_id, p.step, 2 FROM trellis_paced p WHERE p.tenant = @tenant::text
)
SELECT r.version, q.step::int AS step, count(*)::int AS queued, count(*) FILTER (WHERE q.kind = 1)::int AS held,
       count(*) FILTER (WHERE q.kind = 2)::int AS paced, min(t.updated_at)::timestamptz AS oldest_queued_at
FROM q
JOIN trellis_runs r ON r.id = q.run_id AND r.workflow = @workflow::text
JOIN trellis_tasks t ON t.run_id = q.run_id AND t.step = q.step
GROUP BY r.version, q.step
ORDER BY r.version COLLATE "C", q.step;

-- name: OpsWorkflows :many
-- Every stored workflow version, by name (bytewise), then newest first.
SELECT version, name, spec, created_at
FROM trellis_workflows
ORDER BY name COLLATE "C", created_at DESC, version COLLATE "C";

-- name: OpsActivityCreated :many
-- Runs created in a window, per bucket (the bucket's index from the
-- window's start, buckets of bucket_us microseconds). Reads the window's
-- range of trellis_runs_created (schema/0005) and nothing else.
SELECT ((extract(epoch FROM created_at - @window_from::timestamptz) * 1000000)::bigint / @bucket_us::bigint)::int AS bucket,
       count(*)::int AS runs
FROM trellis_runs
WHERE created_at >= @window_from::timestamptz AND created_at < @window_to::timestamptz
GROUP BY 1;

-- name: OpsActivityFinished :many
-- Runs that finished in a window, per status and bucket (as
-- OpsActivityCreated). Reads the window's range of each finished status
-- in trellis_runs_finished (schema/0007) and nothing else.
SELECT status,
       ((extract(epoch FROM finished_at - @window_from::timestamptz) * 1000000)::bigint / @bucket_us::bigint)::int AS bucket,
       count(*)::int AS runs
FROM trellis_runs
WHERE status IN ('COMPLETED', 'FAILED', 'CANCELLED')
  AND finished_at >= @window_from::timestamptz AND finished_at < @window_to::timestamptz
GROUP BY 1, 2;

-- name: OpsRunningRuns :one
-- How many runs are running: the RUNNING range of the partial status
-- index (schema/0005).
SELECT count(*)::int AS runs FROM trellis_runs WHERE status = 'RUNNING';

-- name: OpsEventCounts :many
-- How many events each run's log holds, for runs by id: the runs' ranges
-- of the primary keys of the event rows and of the tasks, whose slots
-- hold the rest (schema/0026).
SELECT run_id, count(*)::int AS events
FROM trellis_event_log
WHERE run_id = ANY (@ids::uuid[])
GROUP BY run_id;

-- name: OpsChildRunCounts :many
-- The runs the steps of a run started, counted by step and status, from
-- the index of their statuses alone (schema/0016).
SELECT parent_step::int AS step, status, count(*)::int AS runs
FROM trellis_runs
WHERE parent_run_id = @run_id::uuid
GROUP BY parent_step, status
ORDER BY parent_step, status;

-- name: OpsChildRunTotals :many
-- The runs the steps of each run of parents started, counted by status,
-- from the index of their statuses alone (schema/0016).
SELECT parent_run_id::uuid AS parent, status, count(*)::int AS runs
FROM trellis_runs
WHERE parent_run_id = ANY (@parents::uuid[])
GROUP BY parent_run_id, status;

-- name: OpsFirstChildRuns :many
-- The first lim runs the steps of each run of parents started, by step,
-- index and creation: at most lim entries of the index of child runs
-- (schema/0012) per parent, however many runs it started.
WITH parents AS (
    SELECT DISTINCT unnest(@parents::uuid[]) AS id
)
SELECT c.id, c.workflow, c.version, c.tenant, c.idempotency_key, c.priority, c.status, c.failed_step, c.error,
       c.created_at, c.finished_at, c.parent_run_id, c.parent_step, c.parent_index, c.rerun_at, c.tags, c.start_at, c.deadline
FROM parents p
CROSS JOIN LATERAL (
    SELECT r.id, r.workflow, r.version, r.tenant, r.idempotency_key, r.priority, r.status, r.failed_step, r.error,
           r.created_at, r.finished_at, r.parent_run_id, r.parent_step, r.parent_index, r.rerun_at, r.tags, r.start_at, r.deadline
    FROM trellis_runs r
    WHERE r.parent_run_id = p.id
    ORDER BY r.parent_step, r.parent_index, r.created_at, r.id
    LIMIT @lim
) c
ORDER BY c.parent_run_id, c.parent_step, c.parent_index, c.created_at, c.id;

-- name: OpsInFlightVersions :many
-- The workflow versions with runs in progress, how many each, by
-- workflow then version (bytewise), at most lim of them: the RUNNING
-- range of the status index of schema/0005, grouped.
SELECT r.workflow, r.version, count(*)::int AS runs
FROM trellis_runs r
WHERE r.status = 'RUNNING'
GROUP BY r.workflow, r.version
ORDER BY r.workflow COLLATE "C", r.version COLLATE "C"
LIMIT @lim;

-- name: OpsInFlightSteps :many
-- For the runs in progress of the given versions, per version and step,
-- how many runs have that step's task not yet ended: the same range of
-- runs, and each run's tasks through the tasks' primary key.
SELECT r.version, t.step::int AS step, count(*)::int AS runs
FROM trellis_runs r
JOIN trellis_tasks t ON t.run_id = r.id
WHERE r.status = 'RUNNING' AND r.version = ANY (@versions::text[])
  AND t.status NOT IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')
GROUP BY r.version, t.step
ORDER BY r.version COLLATE "C", t.step;

-- name: OpsWorkflowsByVersion :many
-- The stored versions among the given ones.
SELECT version, name, spec, created_at
FROM trellis_workflows
WHERE version = ANY (@versions::text[]);

-- name: OpsQueueVersions :many
-- The ready queue per workflow version: how many tasks, and when the task
-- at the head of each version's queue was queued. Reads the ready queue,
-- plus one task per version. Sorted bytewise.
WITH groups AS (
    SELECT workflow, version, count(*) AS n, min(qid) AS head FROM trellis_ready GROUP BY workflow, version
)
SELECT g.workflow::text AS workflow, g.version::text AS version, g.n::int AS queued, (
    SELECT t.updated_at
    FROM trellis_ready h
    JOIN trellis_tasks t ON t.run_id = h.run_id AND t.step = h.step
    WHERE h.qid = g.head AND h.version = g.version
    LIMIT 1
) AS oldest_queued_at
FROM groups g
ORDER BY g.workflow COLLATE "C", g.version COLLATE "C";
