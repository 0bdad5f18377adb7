-- name: TasksInsert :one
-- Creates the tasks of new runs and queues those waiting for no parent
-- (the failure handler excepted), each in its run's new lane, under its
-- limit (trellis_admit). The roots of runs with a run limit (limited) are
-- written QUEUED but left off the queue: trellis_run_limit_admit lets
-- them in. Returns how many were put on the ready queue.
-- Rate limits apply when tasks are claimed (trellis_pace).
-- A queued task's QUEUED event is its log_queued slot (schema/0026).
WITH inserted AS (
    INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, limit_key, limit_max,
                               rate_key, rate_interval, rate_burst, sink, labels, updated_at,
                               log_queued, log_queued_at, log_queued_attempt)
    SELECT t.run_id, t.step, t.kind,
           CASE WHEN t.queued THEN 'QUEUED' ELSE 'PENDING' END,
           t.parents::smallint[], t.pending, t.plain, t.max_attempts, nullif(t.limit_key, ''), nullif(t.limit_max, 0),
           nullif(t.rate_key, ''), nullif(t.rate_interval, 0), nullif(t.rate_burst, 0), t.sink,
           string_to_array(nullif(t.labels, ''), ','), @now,
           CASE WHEN t.queued THEN nextval('trellis_events_id_seq') END,
           CASE WHEN t.queued THEN @now::timestamptz END,
           CASE WHEN t.queued THEN 0 END
    FROM (SELECT u.*, u.pending = 0 AND u.kind <> trellis_kind_on_failure() AS queued FROM (
        -- parents: one array literal per task, such as {0,2}.
        SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step,
               unnest(@kinds::smallint[]) AS kind, unnest(@parents::text[]) AS parents,
               unnest(@pendings::smallint[]) AS pending,
               unnest(@plains::boolean[]) AS plain, unnest(@max_attempts::int[]) AS max_attempts,
               unnest(@limit_keys::text[]) AS limit_key, unnest(@limit_maxes::int[]) AS limit_max,
               unnest(@rate_keys::text[]) AS rate_key, unnest(@rate_intervals::bigint[]) AS rate_interval,
               unnest(@rate_bursts::int[]) AS rate_burst, unnest(@sinks::boolean[]) AS sink,
               -- labels: the task's worker labels joined by ',' (which no
               -- label holds), such as gpu=a100,region=eu; '' for none.
               unnest(@labels::text[]) AS labels
    ) AS u) AS t
    RETURNING run_id, step, status, limit_key, limit_max
), roots AS (
    SELECT i.run_id, i.step, r.tenant, r.workflow, trellis_lane(r.priority, false) AS lane, i.limit_key, i.limit_max
    FROM inserted i
    JOIN (SELECT unnest(@runs::uuid[]) AS id, unnest(@tenants::text[]) AS tenant, unnest(@workflows::text[]) AS workflow,
                 unnest(@priorities::smallint[]) AS priority) AS r
        ON r.id = i.run_id
    WHERE i.status = 'QUEUED' AND NOT (i.run_id = ANY (@limited::uuid[]))
)
SELECT trellis_admit(array_agg(run_id), array_agg(step), array_agg(tenant), array_agg(workflow), array_agg(lane),
                     array_agg(limit_key), array_agg(limit_max))::bigint
FROM roots;

-- name: TaskList :many
SELECT run_id, step, kind, status, attempt, output, error, worker, wake_at, updated_at, finished_at
FROM trellis_tasks
WHERE run_id = @run_id
ORDER BY step;

-- name: TasksOfRuns :many
-- The tasks of the given runs, by run and step.
SELECT run_id, step, kind, status, attempt, output, error, worker, wake_at, updated_at, finished_at
FROM trellis_tasks
WHERE run_id = ANY (@run_ids::uuid[])
ORDER BY run_id, step;

-- name: TasksStart :exec
-- Writes STARTED events for claimed tasks that run their code, no earlier
-- than their claim: in the task's log_started slot when it is empty
-- (schema/0026), else as a row with the id drawn for it. Filling a slot
-- changes the task, so it first locks the runs' rows in id order (see the
-- lock order in the schema), as TasksComplete does.
WITH locked AS (
    SELECT r.id FROM trellis_runs r WHERE r.id = ANY (@run_ids::uuid[]) ORDER BY r.id FOR NO KEY UPDATE
), input AS (
    SELECT k.run_id, k.step, k.attempt, nextval('trellis_events_id_seq') AS event_id
    FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt) AS k
    WHERE (SELECT count(*) FROM locked) >= 0
), started AS (
    UPDATE trellis_tasks t
    SET log_started = coalesce(t.log_started, k.event_id),
        log_started_at = CASE WHEN t.log_started IS NULL THEN greatest(@now::timestamptz, t.updated_at) ELSE t.log_started_at END,
        log_started_attempt = CASE WHEN t.log_started IS NULL THEN t.attempt ELSE t.log_started_attempt END
    FROM input k
    WHERE t.run_id = k.run_id AND t.step = k.step AND t.attempt = k.attempt AND t.status = 'RUNNING'
    RETURNING t.run_id, t.step, t.attempt, greatest(@now::timestamptz, t.updated_at) AS at, k.event_id, t.log_started = k.event_id AS slotted
)
INSERT INTO trellis_events (id, run_id, step, type, attempt, at) OVERRIDING SYSTEM VALUE
SELECT event_id, run_id, step, 'STARTED', attempt, at FROM started WHERE NOT slotted;

-- name: TasksComplete :many
-- Completes (or skips) running tasks, resolves their children, queues the
-- children that became ready (or hands up to hand_off of them to the
-- worker: see store.HandOff) and completes runs with no unresolved sink
-- (only a sink's result updates its run: see schema/0014), in one
-- statement. Returns a row per stale result, per finished run and per
-- task handed off, with what a claim returns.
-- It first locks the runs' rows in id order (see the lock order in the
-- schema): input waits for the count of locked, so every lock is taken
-- before any row changes.
-- The ordinary events (a COMPLETED, a child's QUEUED, a handed-off child's
-- QUEUED and STARTED) fill the tasks' empty slots (schema/0026); the
-- others are rows. Every event's id is drawn before the update that may
-- put it in a slot, in the order of the log: the results' COMPLETED or
-- SKIPPED (input), then the QUEUED of the children queued, then the
-- QUEUED and then the STARTED of those handed off (drawn).
WITH locked AS (
    SELECT r.id FROM trellis_runs r WHERE r.id = ANY (@lock_runs::uuid[]) ORDER BY r.id FOR NO KEY UPDATE
), input AS (
    SELECT i.run_id, i.step, i.attempt, i.skipped, i.detail, i.output, nextval('trellis_events_id_seq') AS event_id
    FROM (
        SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step,
               unnest(@attempts::int[]) AS attempt, unnest(@skipped::boolean[]) AS skipped,
               unnest(@details::text[]) AS detail, unnest(@outputs::json[]) AS output
    ) AS i
    WHERE (SELECT count(*) FROM locked) >= 0
), applied AS (
    -- Each change of a task is stamped no earlier than its previous one
    -- (RETURNING reads the new updated_at).
    UPDATE trellis_tasks t
    SET status = CASE WHEN i.skipped THEN 'SKIPPED' ELSE 'COMPLETED' END,
        output = i.output, updated_at = greatest(@now::timestamptz, t.updated_at), finished_at = greatest(@now::timestamptz, t.updated_at),
        log_completed = CASE WHEN i.skipped THEN t.log_completed ELSE coalesce(t.log_completed, i.event_id) END,
        log_completed_at = CASE WHEN NOT i.skipped AND t.log_completed IS NULL
                                THEN greatest(@now::timestamptz, t.updated_at) ELSE t.log_completed_at END,
        log_completed_attempt = CASE WHEN NOT i.skipped AND t.log_completed IS NULL THEN t.attempt ELSE t.log_completed_attempt END
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
    RETURNING t.run_id, t.step, t.attempt, t.kind, t.sink, i.skipped, i.detail, t.updated_at AS at,
              i.event_id, coalesce(NOT i.skipped AND t.log_completed = i.event_id, false) AS slotted
), released AS (
    DELETE FROM trellis_leases l USING applied a
    WHERE l.run_id = a.run_id AND l.step = a.step
), edges AS (
    -- A child is queued no earlier than the parents that resolved it.
    SELECT e.run_id, e.child, count(*) AS n, max(a.at) AS at
    FROM (SELECT unnest(@edge_runs::uuid[]) AS run_id, unnest(@edge_parents::smallint[]) AS parent, unnest(@edge_children::smallint[]) AS child) AS e
    JOIN applied a ON a.run_id = e.run_id AND a.step = e.parent
    GROUP BY e.run_id, e.child
), head AS MATERIALIZED (
    -- The tenant of the task the worker's next claim would take.
    SELECT q.tenant FROM trellis_ready q
    WHERE @hand_off::int > 0 AND (cardinality(@versions::text[]) = 0 OR q.version = ANY (@versions::text[]))
      AND (q.labels IS NULL OR q.labels <@ @labels::text[])
    ORDER BY q.qid, q.lane DESC LIMIT 1
), offers AS (
    -- Which children go to the worker (see store.HandOff): up to hand_off
    -- of those this batch makes ready as of this statement's snapshot (the
    -- update below reads the latest rows, and hands off only those still
    -- ready there), plain, unlimited, not paused (see schema/0020), where
    -- the queue would have put them first. Each child is looked up by itself (a join with a list of
    -- those offered would be rescanned for every child: the planner
    -- cannot count the rows of a CTE), and not at all without hand_off.
    SELECT e.run_id, e.child, e.n, e.at,
           o.ok IS NOT NULL AND row_number() OVER (PARTITION BY o.ok IS NOT NULL ORDER BY e.run_id, e.child) <= @hand_off::int AS offered
    FROM edges e
    LEFT JOIN LATERAL (
        SELECT true AS ok
        FROM trellis_tasks t
        JOIN trellis_runs r ON r.id = t.run_id
        WHERE @hand_off::int > 0 AND t.run_id = e.run_id AND t.step = e.child
          AND t.status = 'PENDING' AND t.pending = e.n AND t.plain AND t.limit_key IS NULL AND t.rate_key IS NULL
          AND (t.labels IS NULL OR t.labels <@ @labels::text[])
          AND (cardinality(@versions::text[]) = 0 OR r.version = ANY (@versions::text[]))
          AND ((SELECT NOT EXISTS (SELECT FROM trellis_paused))
               OR NOT ((r.workflow, ''::text) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))
                       OR (r.workflow, r.tenant) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))))
          AND NOT EXISTS (SELECT 1 FROM head h WHERE h.tenant <> r.tenant)
          AND NOT EXISTS (SELECT 1 FROM trellis_ready q
                          WHERE q.tenant = r.tenant AND q.lane > trellis_lane(r.priority, true)
                            AND (cardinality(@versions::text[]) = 0 OR q.version = ANY (@versions::text[])))
    ) o ON true
), drawn AS (
    -- The ids of the children's events, should they become ready: the
    -- QUEUED of those not offered, then the QUEUED of those offered, then
    -- their STARTED. Postgres evaluates a volatile output column after
    -- the sort of its query level, so each ORDER BY sets the order in
    -- which its level draws. An id a child does not use is a gap.
    SELECT d.*, CASE WHEN d.offered THEN nextval('trellis_events_id_seq') END AS started_id
    FROM (SELECT o.*, nextval('trellis_events_id_seq') AS queued_id FROM offers o ORDER BY o.offered) d
    ORDER BY d.queued_id
), resolved AS (
    -- A child that becomes ready fills its log_queued slot when empty,
    -- in its attempt before this update, and one handed off its
    -- log_started slot too, in its new attempt.
    UPDATE trellis_tasks t
    SET pending = t.pending - e.n,
        status = CASE WHEN t.pending - e.n > 0 THEN t.status WHEN e.offered THEN 'RUNNING' ELSE 'QUEUED' END,
        attempt = t.attempt + CASE WHEN t.pending - e.n = 0 AND e.offered THEN 1 ELSE 0 END,
        worker = CASE WHEN t.pending - e.n = 0 AND e.offered THEN @worker::text ELSE t.worker END,
        updated_at = greatest(e.at, t.updated_at),
        log_queued = CASE WHEN t.pending - e.n = 0 THEN coalesce(t.log_queued, e.queued_id) ELSE t.log_queued END,
        log_queued_at = CASE WHEN t.pending - e.n = 0 AND t.log_queued IS NULL THEN greatest(e.at, t.updated_at) ELSE t.log_queued_at END,
        log_queued_attempt = CASE WHEN t.pending - e.n = 0 AND t.log_queued IS NULL THEN t.attempt ELSE t.log_queued_attempt END,
        log_started = CASE WHEN t.pending - e.n = 0 AND e.offered THEN coalesce(t.log_started, e.started_id) ELSE t.log_started END,
        log_started_at = CASE WHEN t.pending - e.n = 0 AND e.offered AND t.log_started IS NULL
                              THEN greatest(e.at, t.updated_at) ELSE t.log_started_at END,
        log_started_attempt = CASE WHEN t.pending - e.n = 0 AND e.offered AND t.log_started IS NULL
                                   THEN t.attempt + 1 ELSE t.log_started_attempt END
    FROM drawn e
    WHERE t.run_id = e.run_id AND t.step = e.child AND t.status = 'PENDING'
    RETURNING t.run_id, t.step, t.attempt, t.pending = 0 AS ready, t.status = 'RUNNING' AS handed, t.updated_at AS at,
              t.limit_key, t.limit_max, t.kind, t.prior_attempts, t.parents, cardinality(t.parents) = e.n AS parents_here,
              e.queued_id, coalesce(t.log_queued = e.queued_id, false) AS queued_slotted,
              e.started_id, coalesce(t.log_started = e.started_id, false) AS started_slotted
), unblocked AS (
    -- The children that became ready, with their runs' facts (one read
    -- of each run): queued below, or handed off.
    SELECT s.run_id, s.step, s.attempt, s.kind, s.prior_attempts, s.parents, s.parents_here, s.at, s.handed, s.limit_key, s.limit_max,
           s.queued_id, s.queued_slotted, s.started_id, s.started_slotted,
           r.tenant, r.workflow, r.version, r.input, r.trace_context, trellis_lane(r.priority, true) AS lane
    FROM resolved s JOIN trellis_runs r ON r.id = s.run_id
    WHERE s.ready
), ready AS (
    SELECT run_id, step, tenant, workflow, lane, limit_key, limit_max FROM unblocked WHERE NOT handed
), handed AS (
    SELECT * FROM unblocked WHERE handed
), leased AS (
    INSERT INTO trellis_leases (run_id, step, attempt, worker, tenant, claimed_at)
    SELECT run_id, step, attempt, @worker, tenant, at FROM handed
), runs AS (
    -- A run whose task was applied is running (ending a run cancels its
    -- tasks, but the failure handler, which is no sink). That is tested
    -- only where a run completes: as a filter, r.status = 'RUNNING' could
    -- be planned as a read of every running run through the status
    -- index, which stale statistics make look cheap.
    UPDATE trellis_runs r
    SET unresolved_sinks = r.unresolved_sinks - c.n,
        status = CASE WHEN r.unresolved_sinks - c.n = 0 AND r.status = 'RUNNING' THEN 'COMPLETED' ELSE r.status END,
        finished_at = CASE WHEN r.unresolved_sinks - c.n = 0 AND r.status = 'RUNNING' THEN @now ELSE r.finished_at END
    FROM (SELECT run_id, count(*) AS n FROM applied WHERE sink GROUP BY run_id) c
    WHERE r.id = c.run_id
    RETURNING r.id, r.unresolved_sinks = 0 AND r.status = 'COMPLETED' AS finished
), events AS (
    -- The events no slot took, as rows, with the ids drawn for them: a
    -- handed-off child's QUEUED (in its previous attempt) before its
    -- STARTED.
    INSERT INTO trellis_events (id, run_id, step, type, attempt, at, detail) OVERRIDING SYSTEM VALUE
    SELECT event_id, run_id, step, CASE WHEN skipped THEN 'SKIPPED' ELSE 'COMPLETED' END, attempt, at, nullif(detail, '')
    FROM applied WHERE NOT slotted
    UNION ALL
    SELECT queued_id, run_id, step, 'QUEUED', attempt, at, NULL FROM resolved WHERE ready AND NOT handed AND NOT queued_slotted
    UNION ALL
    SELECT queued_id, run_id, step, 'QUEUED', attempt - 1, at, NULL FROM handed WHERE NOT queued_slotted
    UNION ALL
    SELECT started_id, run_id, step, 'STARTED', attempt, at, NULL FROM handed WHERE NOT started_slotted
), queued AS (
    SELECT trellis_admit(array_agg(run_id), array_agg(step), array_agg(tenant), array_agg(workflow), array_agg(lane),
                         array_agg(limit_key), array_agg(limit_max)) AS n
    FROM ready
)
SELECT 'handed'::text AS what, h.run_id::uuid AS run_id, h.step::smallint AS step, h.attempt::int AS attempt,
       h.kind::smallint AS kind, h.prior_attempts::int AS prior_attempts, h.at::timestamptz AS queued_at,
       h.workflow::text AS workflow, h.version::text AS version, h.tenant::text AS tenant, h.input::json AS input,
       coalesce(h.trace_context, '')::text AS trace_context,
       coalesce(p.steps, h.parents)::smallint[] AS parent_steps, p.statuses::text[] AS parent_statuses, p.outputs::json[] AS parent_outputs
FROM handed h
LEFT JOIN LATERAL (
    -- The parents as this statement found them: those it completed are
    -- still RUNNING here, and the caller takes their outputs from its
    -- results; the others completed earlier (or the child would not have
    -- been offered). A child all of whose parents this statement completed
    -- (a chain's) reads none: its parent steps are all the caller needs.
    SELECT array_agg(pt.step ORDER BY pt.step) AS steps,
           array_agg(pt.status ORDER BY pt.step) AS statuses,
           array_agg(pt.output ORDER BY pt.step) AS outputs
    FROM trellis_tasks pt
    WHERE NOT h.parents_here AND pt.run_id = h.run_id AND pt.step = ANY (h.parents)
) p ON true
UNION ALL
SELECT 'stale', i.run_id, i.step, i.attempt, 0, 0, @now::timestamptz, '', '', '', NULL, '', NULL, NULL, NULL
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM applied a WHERE a.run_id = i.run_id AND a.step = i.step)
UNION ALL
SELECT 'finished', r.id, 0, 0, 0, 0, @now::timestamptz, '', '', '', NULL, '', NULL, NULL, NULL
FROM runs r
WHERE r.finished AND pg_notify(trellis_channel(), 'finished ' || r.id::text) IS NOT NULL
UNION ALL
SELECT 'queued', '00000000-0000-0000-0000-000000000000'::uuid, 0, q.n::int, 0, 0, @now::timestamptz, '', '', '', NULL, '', NULL, NULL, NULL
FROM queued q;

-- name: TasksRetry :many
-- Puts failed attempts to wait on a durable timer for their next attempt.
-- Returns the stale results.
WITH input AS (
    SELECT * FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt, unnest(@errors::text[]) AS error, unnest(@timed_out::boolean[]) AS timed_out, unnest(@wake_ats::timestamptz[]) AS wake_at) AS i
), applied AS (
    UPDATE trellis_tasks t
    SET status = 'RETRYING', error = i.error, wake_at = i.wake_at, updated_at = greatest(@now::timestamptz, t.updated_at)
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
    RETURNING t.run_id, t.step, t.attempt, i.error, i.timed_out, i.wake_at, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING applied a
    WHERE l.run_id = a.run_id AND l.step = a.step
), timers AS (
    INSERT INTO trellis_timers (run_id, step, wake_at)
    SELECT run_id, step, wake_at FROM applied
    ON CONFLICT (run_id, step) DO UPDATE SET wake_at = excluded.wake_at
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail, wake_at)
    SELECT run_id, step, 'TIMED_OUT', attempt, at, error, NULL FROM applied WHERE timed_out
    UNION ALL
    SELECT run_id, step, 'RETRYING', attempt, at, error, wake_at FROM applied
)
SELECT i.run_id::uuid AS run_id, i.step::smallint AS step, i.attempt::int AS attempt
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM applied a WHERE a.run_id = i.run_id AND a.step = i.step);

-- name: TasksSleep :many
-- Puts sleep tasks to sleep on a durable timer, each for its duration from
-- the time its SLEEPING event is stamped. Returns the stale results.
WITH input AS (
    SELECT * FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt, unnest(@micros::bigint[]) AS micros) AS i
), applied AS (
    UPDATE trellis_tasks t
    SET status = 'SLEEPING',
        wake_at = greatest(@now::timestamptz, t.updated_at) + i.micros * interval '1 microsecond',
        updated_at = greatest(@now::timestamptz, t.updated_at)
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
    RETURNING t.run_id, t.step, t.attempt, t.wake_at, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING applied a
    WHERE l.run_id = a.run_id AND l.step = a.step
), timers AS (
    INSERT INTO trellis_timers (run_id, step, wake_at)
    SELECT run_id, step, wake_at FROM applied
    ON CONFLICT (run_id, step) DO UPDATE SET wake_at = excluded.wake_at
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail, wake_at)
    SELECT run_id, step, 'SLEEPING', attempt, at,
           'until ' || to_char(wake_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), wake_at
    FROM applied
)
SELECT i.run_id::uuid AS run_id, i.step::smallint AS step, i.attempt::int AS attempt
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM applied a WHERE a.run_id = i.run_id AND a.step = i.step);

-- name: TasksFail :many
-- Fails running tasks for good. Of several failures of one run only the
-- first counts (the run's other tasks are cancelled by it); failures of a
-- failure handler always count. Returns every applied failure with its
-- kind, and the stale results (applied false).
WITH input AS (
    SELECT * FROM (SELECT u.*, row_number() OVER () AS ord FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt, unnest(@errors::text[]) AS error, unnest(@timed_out::boolean[]) AS timed_out) u) AS i
), live AS (
    SELECT i.*, t.kind, row_number() OVER (PARTITION BY i.run_id, t.kind = trellis_kind_on_failure() ORDER BY i.ord) AS nth
    FROM input i
    JOIN trellis_tasks t ON t.run_id = i.run_id AND t.step = i.step
    WHERE t.status = 'RUNNING' AND t.attempt = i.attempt
), chosen AS (
    SELECT * FROM live WHERE kind = trellis_kind_on_failure() OR nth = 1
), applied AS (
    UPDATE trellis_tasks t
    SET status = 'FAILED', error = c.error, updated_at = greatest(@now::timestamptz, t.updated_at), finished_at = greatest(@now::timestamptz, t.updated_at)
    FROM chosen c
    WHERE t.run_id = c.run_id AND t.step = c.step AND t.status = 'RUNNING' AND t.attempt = c.attempt
    RETURNING t.run_id, t.step, t.attempt, t.kind, c.error, c.timed_out, c.ord, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING applied a
    WHERE l.run_id = a.run_id AND l.step = a.step
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'TIMED_OUT', attempt, at, error FROM applied WHERE timed_out
    UNION ALL
    SELECT run_id, step, 'FAILED', attempt, at, error FROM applied
)
SELECT true AS applied, a.run_id, a.step, a.attempt, a.kind, a.error::text AS error
FROM applied a
UNION ALL
SELECT false, i.run_id, i.step, i.attempt, 0::smallint, ''
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM chosen c WHERE c.run_id = i.run_id AND c.step = i.step);

-- name: TasksUnqueueUnfinished :exec
-- Removes the queue entries and timers of the unfinished tasks of the
-- given runs (the failure handler's too when with_handler): the first half
-- of cancelling them, done before touching the tasks (see the lock order).
-- Each entry's task is read by its key: as a join, a thousand runs were
-- planned as a hash join over every task (620 ms with 1.5 million).
WITH unqueued AS (
    DELETE FROM trellis_ready q
    WHERE q.run_id = ANY (@run_ids::uuid[])
      AND (@with_handler::boolean OR (SELECT t.kind FROM trellis_tasks t WHERE t.run_id = q.run_id AND t.step = q.step) <> trellis_kind_on_failure())
)
DELETE FROM trellis_timers m
WHERE m.run_id = ANY (@run_ids::uuid[])
  AND (@with_handler::boolean OR (SELECT t.kind FROM trellis_tasks t WHERE t.run_id = m.run_id AND t.step = m.step) <> trellis_kind_on_failure());

-- name: TasksCancelUnfinished :many
-- Cancels every unfinished task of the given runs (the failure handler too
-- when with_handler) and drops their leases. Call TasksUnqueueUnfinished
-- first. Returns the cancelled tasks.
WITH cancelled AS (
    UPDATE trellis_tasks t
    SET status = 'CANCELLED', updated_at = greatest(@now::timestamptz, t.updated_at), finished_at = greatest(@now::timestamptz, t.updated_at)
    WHERE t.run_id = ANY (@run_ids::uuid[])
      AND t.status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'RETRYING', 'WAITING')
      AND (t.kind <> trellis_kind_on_failure() OR @with_handler::boolean)
    RETURNING t.run_id, t.step, t.attempt, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING cancelled c WHERE l.run_id = c.run_id AND l.step = c.step
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'CANCELLED', attempt, at, @detail::text FROM cancelled
)
SELECT run_id, step, attempt FROM cancelled;

-- name: TasksQueueHandlers :one
-- Queues the failure handlers of failed runs. Returns how many.
WITH handlers AS (
    UPDATE trellis_tasks t
    SET status = 'QUEUED', updated_at = greatest(@now::timestamptz, t.updated_at)
    WHERE t.run_id = ANY (@run_ids::uuid[]) AND t.kind = trellis_kind_on_failure() AND t.status = 'PENDING'
    RETURNING t.run_id, t.step, t.attempt, t.updated_at AS at
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at)
    SELECT run_id, step, 'QUEUED', attempt, at FROM handlers
)
SELECT trellis_enqueue(array_agg(h.run_id), array_agg(h.step), array_agg(false), array_agg(r.tenant), array_agg(r.workflow), array_agg(trellis_lane(r.priority, true)))::bigint
FROM handlers h JOIN trellis_runs r ON r.id = h.run_id;

-- name: TasksDequeue :exec
-- Removes the queue entries and timers of tasks about to be reset, given
-- as pairs (run_ids[i], steps[i]).
WITH keys AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step
), unqueued AS (
    DELETE FROM trellis_ready q USING keys k
    WHERE q.run_id = k.run_id AND q.step = k.step
), unwaited AS (
    DELETE FROM trellis_waiting w USING keys k
    WHERE w.run_id = k.run_id AND w.step = k.step
)
DELETE FROM trellis_timers m USING keys k
WHERE m.run_id = k.run_id AND m.step = k.step;

-- name: TasksReset :one
-- Gives tasks of reopened runs another go, given as (run_ids[i],
-- steps[i], pendings[i], details[i]): each returns to PENDING waiting for
-- its unresolved parents, or is queued when it waits for none, with a
-- QUEUED event saying details[i]. Running tasks are left alone. Returns
-- how many were queued.
WITH input AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@pendings::smallint[]) AS pending,
           unnest(@details::text[]) AS detail
), reset AS (
    UPDATE trellis_tasks t
    SET status = CASE WHEN i.pending = 0 AND t.kind <> trellis_kind_on_failure() THEN 'QUEUED' ELSE 'PENDING' END,
        pending = i.pending, prior_attempts = t.attempt, output = NULL, error = NULL,
        worker = NULL, wake_at = NULL, updated_at = greatest(@now::timestamptz, t.updated_at), finished_at = NULL
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status <> 'RUNNING'
    RETURNING t.run_id, t.step, t.attempt, t.status, t.updated_at AS at, t.limit_key, t.limit_max, i.detail
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'QUEUED', attempt, at, detail FROM reset WHERE status = 'QUEUED'
)
SELECT trellis_admit(array_agg(s.run_id), array_agg(s.step), array_agg(r.tenant), array_agg(r.workflow), array_agg(trellis_lane(r.priority, true)),
                     array_agg(s.limit_key), array_agg(s.limit_max))::bigint
FROM reset s JOIN trellis_runs r ON r.id = s.run_id
WHERE s.status = 'QUEUED';

-- name: TasksStuck :many
-- Tasks making no progress since @before, oldest first: running under a
-- lease claimed before it, queued before it, or waiting on a timer that
-- was due before it. Reads only the live tables and the rows they point to.
SELECT s.run_id, s.step, t.status, t.attempt, s.worker, s.since, r.workflow, r.version, r.tenant
FROM (
    SELECT l.run_id, l.step, l.worker, l.claimed_at AS since
    FROM trellis_leases l WHERE l.claimed_at < @before::timestamptz
    UNION ALL
    SELECT q.run_id, q.step, '' AS worker, qt.updated_at AS since
    FROM trellis_ready q JOIN trellis_tasks qt ON qt.run_id = q.run_id AND qt.step = q.step
    WHERE qt.updated_at < @before::timestamptz
    UNION ALL
    SELECT m.run_id, m.step, '' AS worker, m.wake_at AS since
    FROM trellis_timers m WHERE m.wake_at < @before::timestamptz
) s
JOIN trellis_tasks t ON t.run_id = s.run_id AND t.step = s.step
JOIN trellis_runs r ON r.id = s.run_id
ORDER BY s.since, s.run_id, s.step
LIMIT @lim;

-- name: TasksWait :many
-- Moves running tasks to WAITING for their child runs, counts[i] of them
-- (created next, in the same transaction), until deadlines[i] (NULL for
-- none: a timer wakes the task then), and drops their leases. Returns
-- the tasks moved, with the time of their WAITING event.
WITH input AS (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt,
           -- The zero time (0001-01-01) stands for no deadline.
           unnest(@counts::int[]) AS n, nullif(unnest(@deadlines::timestamptz[]), '0001-01-01 00:00:00+00') AS deadline
), applied AS (
    UPDATE trellis_tasks t
    SET status = 'WAITING', awaiting = i.n, wake_at = NULL, updated_at = greatest(@now::timestamptz, t.updated_at)
    FROM input i
    WHERE t.run_id = i.run_id AND t.step = i.step AND t.status = 'RUNNING' AND t.attempt = i.attempt
    RETURNING t.run_id, t.step, t.attempt, i.n, i.deadline, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING applied a
    WHERE l.run_id = a.run_id AND l.step = a.step
), timers AS (
    INSERT INTO trellis_timers (run_id, step, wake_at)
    SELECT run_id, step, deadline FROM applied WHERE deadline IS NOT NULL AND n > 0
    ON CONFLICT (run_id, step) DO UPDATE SET wake_at = excluded.wake_at
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'WAITING', attempt, at,
           CASE WHEN n = 1 THEN 'waiting for 1 child run' ELSE 'waiting for ' || n || ' child runs' END
    FROM applied
)
SELECT run_id, step, attempt, at FROM applied;

-- name: TaskWake :exec
-- Queues a waiting task again, woken (see trellis_wake).
SELECT trellis_wake(@run_id::uuid, @step::smallint, @at::timestamptz, @detail::text);
