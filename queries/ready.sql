-- name: ReadyClaim :many
-- Takes up to lim tasks of the given workflow versions from the ready queue in
-- fair order, marks them RUNNING for the worker under a fresh lease, and
-- returns them with their run's facts and their parents' statuses and
-- outputs. Plain tasks get their STARTED event here. A queue entry whose
-- task is no longer QUEUED (its run was cancelled meanwhile) is dropped.
-- (Rendered from ready.sql.tmpl, which it shares with ReadyClaimLimited.)
WITH picked AS (
    SELECT q.run_id, q.step
    FROM trellis_ready q
    WHERE ((SELECT cardinality(@versions::text[]) = 0) OR version = ANY (ARRAY(SELECT unnest(@versions::text[]))))
      AND ((SELECT NOT EXISTS (SELECT FROM trellis_paused))
      OR NOT ((q.workflow, ''::text) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))
              OR (q.workflow, q.tenant) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))))
      AND ((SELECT NOT EXISTS (SELECT FROM trellis_ready l WHERE l.labels IS NOT NULL))
      OR q.labels IS NULL OR q.labels <@ @labels::text[])
    ORDER BY q.qid, q.lane DESC
    LIMIT (SELECT @lim::int)
    FOR UPDATE SKIP LOCKED
), taken AS (
    -- run_id = ANY (...) lets the primary key find the rows; a plain join
    -- would be planned as a scan of the whole queue.
    -- Each task not woken gets the id of its STARTED event, drawn here,
    -- before the update that fills its slot (see started).
    DELETE FROM trellis_ready q
    WHERE q.run_id = ANY (ARRAY(SELECT run_id FROM picked))
      AND (q.run_id, q.step) IN (SELECT run_id, step FROM picked)
    RETURNING q.run_id, q.step, q.wake, q.tenant,
              CASE WHEN NOT q.wake THEN nextval('trellis_events_id_seq') END AS event_id
), claimed AS (
    -- Stamped no earlier than the task's last change (its QUEUED event),
    -- whatever the caller's clock says.
    -- run_id = ANY (...) again: without it, statistics that make QUEUED
    -- look common (a burst of new runs before ANALYZE) get the join
    -- planned as a scan of every task. step = ANY (...) too, so that the
    -- primary key finds the tasks taken rather than every task of their
    -- runs (BenchmarkTaskCycle: 52 to 48.5 µs of server CPU per task
    -- claimed, chain of five).
    -- A task with a rate limit starts only at its turn (trellis_pace): the
    -- call names k, so that it is a condition of the join, tested for the
    -- tasks taken only, never for others of their runs.
    -- A plain task's STARTED event fills its log_started slot when that
    -- is empty (schema/0026).
    UPDATE trellis_tasks t
    SET status = 'RUNNING', worker = @worker::text, updated_at = greatest(@now::timestamptz, t.updated_at),
        attempt = t.attempt + CASE WHEN k.wake THEN 0 ELSE 1 END, rate_turn = NULL,
        log_started = CASE WHEN t.plain AND NOT k.wake THEN coalesce(t.log_started, k.event_id) ELSE t.log_started END,
        log_started_at = CASE WHEN t.plain AND NOT k.wake AND t.log_started IS NULL
                              THEN greatest(@now::timestamptz, t.updated_at) ELSE t.log_started_at END,
        log_started_attempt = CASE WHEN t.plain AND NOT k.wake AND t.log_started IS NULL
                                   THEN t.attempt + 1 ELSE t.log_started_attempt END
    FROM taken k
    WHERE t.run_id = ANY (ARRAY(SELECT run_id FROM taken)) AND t.step = ANY (ARRAY(SELECT DISTINCT step FROM taken))
      AND t.run_id = k.run_id AND t.step = k.step AND t.status = 'QUEUED'
      AND (t.rate_key IS NULL OR k.wake
           OR trellis_pace(k.run_id, k.step, t.rate_key, t.rate_interval, t.rate_burst, t.rate_turn,
                           greatest(@now::timestamptz, t.updated_at)))
    RETURNING t.run_id, t.step, t.kind, t.attempt, t.prior_attempts, (t.plain AND NOT k.wake)::boolean AS plain, k.wake, k.tenant, t.parents, t.updated_at AS at,
              k.event_id, coalesce(t.log_started = k.event_id, false) AS slotted
), leased AS (
    INSERT INTO trellis_leases (run_id, step, attempt, worker, tenant, claimed_at)
    SELECT run_id, step, attempt, @worker, tenant, at FROM claimed
), started AS (
    -- The STARTED events whose slot was taken (a later attempt's) are
    -- rows, with the ids drawn for them.
    INSERT INTO trellis_events (id, run_id, step, type, attempt, at) OVERRIDING SYSTEM VALUE
    SELECT event_id, run_id, step, 'STARTED', attempt, at FROM claimed WHERE plain AND NOT slotted
)
SELECT c.run_id, c.step, c.kind, c.attempt, c.prior_attempts, c.plain, c.wake,
       r.workflow, r.version, r.tenant, r.input, r.failed_step, coalesce(r.error, '')::text AS error,
       coalesce(r.trace_context, '')::text AS trace_context, p.queued_at::timestamptz AS queued_at,
       p.steps AS parent_steps, p.statuses AS parent_statuses, p.outputs AS parent_outputs
FROM claimed c
JOIN trellis_runs r ON r.id = c.run_id
LEFT JOIN LATERAL (
    -- One scan reads the parents and the task itself. This statement sees
    -- the tasks as they were before it: the task as it was queued, its
    -- updated_at the time it was queued.
    SELECT array_agg(pt.step ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::smallint[] AS steps,
           array_agg(pt.status ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::text[] AS statuses,
           array_agg(pt.output ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::json[] AS outputs,
           max(pt.updated_at) FILTER (WHERE pt.step = c.step) AS queued_at
    FROM trellis_tasks pt
    WHERE pt.run_id = c.run_id AND pt.step = ANY (c.parents || c.step)
) p ON true;

-- name: ReadyClaimLimited :many
-- ReadyClaim under a per-tenant cap on running tasks: it picks only tasks
-- of tenants under the cap, among the first scan queued tasks, and claims
-- them as ReadyClaim does. The caller holds the claim lock (ClaimLock),
-- so that concurrent claims cannot together exceed the cap.
-- (Rendered from ready.sql.tmpl, which it shares with ReadyClaim.)
WITH running AS (
    SELECT tenant, count(*) AS n FROM trellis_leases GROUP BY tenant
), eligible AS (
    SELECT q.run_id, q.step, q.qid, q.lane,
           row_number() OVER (PARTITION BY q.tenant ORDER BY q.qid, q.lane DESC) + coalesce(r.n, 0) AS nth
    FROM (
        SELECT run_id, step, qid, lane, tenant FROM trellis_ready q
        WHERE ((SELECT cardinality(@versions::text[]) = 0) OR version = ANY (ARRAY(SELECT unnest(@versions::text[]))))
          AND ((SELECT NOT EXISTS (SELECT FROM trellis_paused))
      OR NOT ((q.workflow, ''::text) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))
              OR (q.workflow, q.tenant) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))))
          AND ((SELECT NOT EXISTS (SELECT FROM trellis_ready l WHERE l.labels IS NOT NULL))
      OR q.labels IS NULL OR q.labels <@ @labels::text[])
        ORDER BY qid, lane DESC
        LIMIT @scan::int
    ) q
    LEFT JOIN running r ON r.tenant = q.tenant
), picked AS (
    SELECT q.run_id, q.step
    FROM trellis_ready q
    JOIN eligible w ON w.run_id = q.run_id AND w.step = q.step
    WHERE w.nth <= @tenant_limit::bigint
    ORDER BY w.qid, w.lane DESC
    LIMIT (SELECT @lim::int)
    FOR UPDATE OF q SKIP LOCKED
), taken AS (
    -- run_id = ANY (...) lets the primary key find the rows; a plain join
    -- would be planned as a scan of the whole queue.
    -- Each task not woken gets the id of its STARTED event, drawn here,
    -- before the update that fills its slot (see started).
    DELETE FROM trellis_ready q
    WHERE q.run_id = ANY (ARRAY(SELECT run_id FROM picked))
      AND (q.run_id, q.step) IN (SELECT run_id, step FROM picked)
    RETURNING q.run_id, q.step, q.wake, q.tenant,
              CASE WHEN NOT q.wake THEN nextval('trellis_events_id_seq') END AS event_id
), claimed AS (
    -- Stamped no earlier than the task's last change (its QUEUED event),
    -- whatever the caller's clock says.
    -- run_id = ANY (...) again: without it, statistics that make QUEUED
    -- look common (a burst of new runs before ANALYZE) get the join
    -- planned as a scan of every task. step = ANY (...) too, so that the
    -- primary key finds the tasks taken rather than every task of their
    -- runs (BenchmarkTaskCycle: 52 to 48.5 µs of server CPU per task
    -- claimed, chain of five).
    -- A task with a rate limit starts only at its turn (trellis_pace): the
    -- call names k, so that it is a condition of the join, tested for the
    -- tasks taken only, never for others of their runs.
    -- A plain task's STARTED event fills its log_started slot when that
    -- is empty (schema/0026).
    UPDATE trellis_tasks t
    SET status = 'RUNNING', worker = @worker::text, updated_at = greatest(@now::timestamptz, t.updated_at),
        attempt = t.attempt + CASE WHEN k.wake THEN 0 ELSE 1 END, rate_turn = NULL,
        log_started = CASE WHEN t.plain AND NOT k.wake THEN coalesce(t.log_started, k.event_id) ELSE t.log_started END,
        log_started_at = CASE WHEN t.plain AND NOT k.wake AND t.log_started IS NULL
                              THEN greatest(@now::timestamptz, t.updated_at) ELSE t.log_started_at END,
        log_started_attempt = CASE WHEN t.plain AND NOT k.wake AND t.log_started IS NULL
                                   THEN t.attempt + 1 ELSE t.log_started_attempt END
    FROM taken k
    WHERE t.run_id = ANY (ARRAY(SELECT run_id FROM taken)) AND t.step = ANY (ARRAY(SELECT DISTINCT step FROM taken))
      AND t.run_id = k.run_id AND t.step = k.step AND t.status = 'QUEUED'
      AND (t.rate_key IS NULL OR k.wake
           OR trellis_pace(k.run_id, k.step, t.rate_key, t.rate_interval, t.rate_burst, t.rate_turn,
                           greatest(@now::timestamptz, t.updated_at)))
    RETURNING t.run_id, t.step, t.kind, t.attempt, t.prior_attempts, (t.plain AND NOT k.wake)::boolean AS plain, k.wake, k.tenant, t.parents, t.updated_at AS at,
              k.event_id, coalesce(t.log_started = k.event_id, false) AS slotted
), leased AS (
    INSERT INTO trellis_leases (run_id, step, attempt, worker, tenant, claimed_at)
    SELECT run_id, step, attempt, @worker, tenant, at FROM claimed
), started AS (
    -- The STARTED events whose slot was taken (a later attempt's) are
    -- rows, with the ids drawn for them.
    INSERT INTO trellis_events (id, run_id, step, type, attempt, at) OVERRIDING SYSTEM VALUE
    SELECT event_id, run_id, step, 'STARTED', attempt, at FROM claimed WHERE plain AND NOT slotted
)
SELECT c.run_id, c.step, c.kind, c.attempt, c.prior_attempts, c.plain, c.wake,
       r.workflow, r.version, r.tenant, r.input, r.failed_step, coalesce(r.error, '')::text AS error,
       coalesce(r.trace_context, '')::text AS trace_context, p.queued_at::timestamptz AS queued_at,
       p.steps AS parent_steps, p.statuses AS parent_statuses, p.outputs AS parent_outputs
FROM claimed c
JOIN trellis_runs r ON r.id = c.run_id
LEFT JOIN LATERAL (
    -- One scan reads the parents and the task itself. This statement sees
    -- the tasks as they were before it: the task as it was queued, its
    -- updated_at the time it was queued.
    SELECT array_agg(pt.step ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::smallint[] AS steps,
           array_agg(pt.status ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::text[] AS statuses,
           array_agg(pt.output ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::json[] AS outputs,
           max(pt.updated_at) FILTER (WHERE pt.step = c.step) AS queued_at
    FROM trellis_tasks pt
    WHERE pt.run_id = c.run_id AND pt.step = ANY (c.parents || c.step)
) p ON true;

-- name: ReadyPick :many
-- The tasks ReadyClaim would take, in its order, locked and left queued:
-- a claim that failed on one task's data claims them one at a time
-- instead (ReadyClaimKeys), so that the task holds up no other.
-- (Rendered from ready.sql.tmpl.)
WITH picked AS (
    SELECT q.run_id, q.step
    FROM trellis_ready q
    WHERE ((SELECT cardinality(@versions::text[]) = 0) OR version = ANY (ARRAY(SELECT unnest(@versions::text[]))))
      AND ((SELECT NOT EXISTS (SELECT FROM trellis_paused))
      OR NOT ((q.workflow, ''::text) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))
              OR (q.workflow, q.tenant) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))))
      AND ((SELECT NOT EXISTS (SELECT FROM trellis_ready l WHERE l.labels IS NOT NULL))
      OR q.labels IS NULL OR q.labels <@ @labels::text[])
    ORDER BY q.qid, q.lane DESC
    LIMIT (SELECT @lim::int)
    FOR UPDATE SKIP LOCKED
)
SELECT run_id, step FROM picked;

-- name: ReadyPickLimited :many
-- ReadyPick under a per-tenant cap, as ReadyClaimLimited picks.
-- (Rendered from ready.sql.tmpl.)
WITH running AS (
    SELECT tenant, count(*) AS n FROM trellis_leases GROUP BY tenant
), eligible AS (
    SELECT q.run_id, q.step, q.qid, q.lane,
           row_number() OVER (PARTITION BY q.tenant ORDER BY q.qid, q.lane DESC) + coalesce(r.n, 0) AS nth
    FROM (
        SELECT run_id, step, qid, lane, tenant FROM trellis_ready q
        WHERE ((SELECT cardinality(@versions::text[]) = 0) OR version = ANY (ARRAY(SELECT unnest(@versions::text[]))))
          AND ((SELECT NOT EXISTS (SELECT FROM trellis_paused))
      OR NOT ((q.workflow, ''::text) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))
              OR (q.workflow, q.tenant) = ANY (ARRAY(SELECT (p.workflow, p.tenant) FROM trellis_paused p))))
          AND ((SELECT NOT EXISTS (SELECT FROM trellis_ready l WHERE l.labels IS NOT NULL))
      OR q.labels IS NULL OR q.labels <@ @labels::text[])
        ORDER BY qid, lane DESC
        LIMIT @scan::int
    ) q
    LEFT JOIN running r ON r.tenant = q.tenant
), picked AS (
    SELECT q.run_id, q.step
    FROM trellis_ready q
    JOIN eligible w ON w.run_id = q.run_id AND w.step = q.step
    WHERE w.nth <= @tenant_limit::bigint
    ORDER BY w.qid, w.lane DESC
    LIMIT (SELECT @lim::int)
    FOR UPDATE OF q SKIP LOCKED
)
SELECT run_id, step FROM picked;

-- name: ReadyClaimKeys :many
-- Claims the given queued tasks as ReadyClaim claims.
-- (Rendered from ready.sql.tmpl.)
WITH picked AS (
    SELECT q.run_id, q.step
    FROM trellis_ready q
    WHERE q.run_id = ANY (@run_ids::uuid[])
      AND (q.run_id, q.step) IN (SELECT unnest(@run_ids::uuid[]), unnest(@steps::smallint[]))
    FOR UPDATE SKIP LOCKED
), taken AS (
    -- run_id = ANY (...) lets the primary key find the rows; a plain join
    -- would be planned as a scan of the whole queue.
    -- Each task not woken gets the id of its STARTED event, drawn here,
    -- before the update that fills its slot (see started).
    DELETE FROM trellis_ready q
    WHERE q.run_id = ANY (ARRAY(SELECT run_id FROM picked))
      AND (q.run_id, q.step) IN (SELECT run_id, step FROM picked)
    RETURNING q.run_id, q.step, q.wake, q.tenant,
              CASE WHEN NOT q.wake THEN nextval('trellis_events_id_seq') END AS event_id
), claimed AS (
    -- Stamped no earlier than the task's last change (its QUEUED event),
    -- whatever the caller's clock says.
    -- run_id = ANY (...) again: without it, statistics that make QUEUED
    -- look common (a burst of new runs before ANALYZE) get the join
    -- planned as a scan of every task. step = ANY (...) too, so that the
    -- primary key finds the tasks taken rather than every task of their
    -- runs (BenchmarkTaskCycle: 52 to 48.5 µs of server CPU per task
    -- claimed, chain of five).
    -- A task with a rate limit starts only at its turn (trellis_pace): the
    -- call names k, so that it is a condition of the join, tested for the
    -- tasks taken only, never for others of their runs.
    -- A plain task's STARTED event fills its log_started slot when that
    -- is empty (schema/0026).
    UPDATE trellis_tasks t
    SET status = 'RUNNING', worker = @worker::text, updated_at = greatest(@now::timestamptz, t.updated_at),
        attempt = t.attempt + CASE WHEN k.wake THEN 0 ELSE 1 END, rate_turn = NULL,
        log_started = CASE WHEN t.plain AND NOT k.wake THEN coalesce(t.log_started, k.event_id) ELSE t.log_started END,
        log_started_at = CASE WHEN t.plain AND NOT k.wake AND t.log_started IS NULL
                              THEN greatest(@now::timestamptz, t.updated_at) ELSE t.log_started_at END,
        log_started_attempt = CASE WHEN t.plain AND NOT k.wake AND t.log_started IS NULL
                                   THEN t.attempt + 1 ELSE t.log_started_attempt END
    FROM taken k
    WHERE t.run_id = ANY (ARRAY(SELECT run_id FROM taken)) AND t.step = ANY (ARRAY(SELECT DISTINCT step FROM taken))
      AND t.run_id = k.run_id AND t.step = k.step AND t.status = 'QUEUED'
      AND (t.rate_key IS NULL OR k.wake
           OR trellis_pace(k.run_id, k.step, t.rate_key, t.rate_interval, t.rate_burst, t.rate_turn,
                           greatest(@now::timestamptz, t.updated_at)))
    RETURNING t.run_id, t.step, t.kind, t.attempt, t.prior_attempts, (t.plain AND NOT k.wake)::boolean AS plain, k.wake, k.tenant, t.parents, t.updated_at AS at,
              k.event_id, coalesce(t.log_started = k.event_id, false) AS slotted
), leased AS (
    INSERT INTO trellis_leases (run_id, step, attempt, worker, tenant, claimed_at)
    SELECT run_id, step, attempt, @worker, tenant, at FROM claimed
), started AS (
    -- The STARTED events whose slot was taken (a later attempt's) are
    -- rows, with the ids drawn for them.
    INSERT INTO trellis_events (id, run_id, step, type, attempt, at) OVERRIDING SYSTEM VALUE
    SELECT event_id, run_id, step, 'STARTED', attempt, at FROM claimed WHERE plain AND NOT slotted
)
SELECT c.run_id, c.step, c.kind, c.attempt, c.prior_attempts, c.plain, c.wake,
       r.workflow, r.version, r.tenant, r.input, r.failed_step, coalesce(r.error, '')::text AS error,
       coalesce(r.trace_context, '')::text AS trace_context, p.queued_at::timestamptz AS queued_at,
       p.steps AS parent_steps, p.statuses AS parent_statuses, p.outputs AS parent_outputs
FROM claimed c
JOIN trellis_runs r ON r.id = c.run_id
LEFT JOIN LATERAL (
    -- One scan reads the parents and the task itself. This statement sees
    -- the tasks as they were before it: the task as it was queued, its
    -- updated_at the time it was queued.
    SELECT array_agg(pt.step ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::smallint[] AS steps,
           array_agg(pt.status ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::text[] AS statuses,
           array_agg(pt.output ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::json[] AS outputs,
           max(pt.updated_at) FILTER (WHERE pt.step = c.step) AS queued_at
    FROM trellis_tasks pt
    WHERE pt.run_id = c.run_id AND pt.step = ANY (c.parents || c.step)
) p ON true;

-- name: ReadyQuarantine :many
-- Claims the given queued tasks bare, for the engine to fail them: their
-- claim failed on their own data (a rate limit key too long for its
-- index, say), so this one leaves out what reads it: no rate limit turn,
-- no STARTED event. (Rendered from ready.sql.tmpl.)
WITH picked AS (
    SELECT q.run_id, q.step
    FROM trellis_ready q
    WHERE q.run_id = ANY (@run_ids::uuid[])
      AND (q.run_id, q.step) IN (SELECT unnest(@run_ids::uuid[]), unnest(@steps::smallint[]))
    FOR UPDATE SKIP LOCKED
), taken AS (
    -- run_id = ANY (...) lets the primary key find the rows; a plain join
    -- would be planned as a scan of the whole queue.
    -- Each task not woken gets the id of its STARTED event, drawn here,
    -- before the update that fills its slot (see started).
    DELETE FROM trellis_ready q
    WHERE q.run_id = ANY (ARRAY(SELECT run_id FROM picked))
      AND (q.run_id, q.step) IN (SELECT run_id, step FROM picked)
    RETURNING q.run_id, q.step, q.wake, q.tenant,
              NULL::bigint AS event_id
), claimed AS (
    -- Stamped no earlier than the task's last change (its QUEUED event),
    -- whatever the caller's clock says.
    -- run_id = ANY (...) again: without it, statistics that make QUEUED
    -- look common (a burst of new runs before ANALYZE) get the join
    -- planned as a scan of every task. step = ANY (...) too, so that the
    -- primary key finds the tasks taken rather than every task of their
    -- runs (BenchmarkTaskCycle: 52 to 48.5 µs of server CPU per task
    -- claimed, chain of five).
    -- A task with a rate limit starts only at its turn (trellis_pace): the
    -- call names k, so that it is a condition of the join, tested for the
    -- tasks taken only, never for others of their runs.
    -- A plain task's STARTED event fills its log_started slot when that
    -- is empty (schema/0026).
    UPDATE trellis_tasks t
    SET status = 'RUNNING', worker = @worker::text, updated_at = greatest(@now::timestamptz, t.updated_at),
        attempt = t.attempt + CASE WHEN k.wake THEN 0 ELSE 1 END, rate_turn = NULL
    FROM taken k
    WHERE t.run_id = ANY (ARRAY(SELECT run_id FROM taken)) AND t.step = ANY (ARRAY(SELECT DISTINCT step FROM taken))
      AND t.run_id = k.run_id AND t.step = k.step AND t.status = 'QUEUED'
    RETURNING t.run_id, t.step, t.kind, t.attempt, t.prior_attempts, false::boolean AS plain, k.wake, k.tenant, t.parents, t.updated_at AS at,
              k.event_id, coalesce(t.log_started = k.event_id, false) AS slotted
), leased AS (
    INSERT INTO trellis_leases (run_id, step, attempt, worker, tenant, claimed_at)
    SELECT run_id, step, attempt, @worker, tenant, at FROM claimed
)
SELECT c.run_id, c.step, c.kind, c.attempt, c.prior_attempts, c.plain, c.wake,
       r.workflow, r.version, r.tenant, r.input, r.failed_step, coalesce(r.error, '')::text AS error,
       coalesce(r.trace_context, '')::text AS trace_context, p.queued_at::timestamptz AS queued_at,
       p.steps AS parent_steps, p.statuses AS parent_statuses, p.outputs AS parent_outputs
FROM claimed c
JOIN trellis_runs r ON r.id = c.run_id
LEFT JOIN LATERAL (
    -- One scan reads the parents and the task itself. This statement sees
    -- the tasks as they were before it: the task as it was queued, its
    -- updated_at the time it was queued.
    SELECT array_agg(pt.step ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::smallint[] AS steps,
           array_agg(pt.status ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::text[] AS statuses,
           array_agg(pt.output ORDER BY pt.step) FILTER (WHERE pt.step <> c.step)::json[] AS outputs,
           max(pt.updated_at) FILTER (WHERE pt.step = c.step) AS queued_at
    FROM trellis_tasks pt
    WHERE pt.run_id = c.run_id AND pt.step = ANY (c.parents || c.step)
) p ON true;

-- name: ClaimLock :exec
-- Serialises limited claims until the end of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.trellis.claim', 0));

-- name: ReadyDepth :many
-- Queued and running tasks per tenant, for the lim tenants with the most
-- queued (then running) tasks, in that order; each row also carries the
-- totals over every tenant. It counts the ready queue and the leases,
-- which hold live work only, and locks nothing.
WITH queued AS (
    -- Tasks waiting for a slot of their concurrency limit, or for their
    -- turn of their rate limit, are queued too, and so are the first
    -- steps of runs waiting for a run slot or their debounce window.
    SELECT tenant, count(*) AS n
    FROM (SELECT tenant FROM trellis_ready UNION ALL SELECT tenant FROM trellis_waiting
          UNION ALL SELECT tenant FROM trellis_paced
          UNION ALL SELECT r.tenant FROM trellis_run_waiting w JOIN trellis_runs r ON r.id = w.run_id
                    JOIN trellis_tasks t ON t.run_id = w.run_id AND t.status = 'QUEUED') q
    GROUP BY tenant
), running AS (
    SELECT tenant, count(*) AS n FROM trellis_leases GROUP BY tenant
), depth AS (
    SELECT coalesce(q.tenant, r.tenant) AS tenant, coalesce(q.n, 0) AS queued, coalesce(r.n, 0) AS running
    FROM queued q FULL JOIN running r ON r.tenant = q.tenant
)
SELECT tenant::text AS tenant, queued::bigint AS queued, running::bigint AS running,
       (sum(queued) OVER ())::bigint AS total_queued, (sum(running) OVER ())::bigint AS total_running
FROM depth
ORDER BY queued DESC, running DESC, tenant COLLATE "C"
LIMIT @lim;

-- Code generated by sqltmpl from ready.sql.tmpl. DO NOT EDIT.
