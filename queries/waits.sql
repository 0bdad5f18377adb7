-- name: EventLocks :exec
-- Takes the event locks (trellis_event_lock) of the given addresses, in
-- one order, so that two transactions taking several never deadlock.
-- The subquery sorts the addresses before any lock is taken.
SELECT trellis_event_lock(a.workflow, a.tenant, a.name, a.key)
FROM (
    SELECT DISTINCT i.workflow, i.tenant, i.name, i.key
    FROM (
        SELECT unnest(@workflows::text[]) AS workflow, unnest(@tenants::text[]) AS tenant,
               unnest(@names::text[]) AS name, unnest(@keys::text[]) AS key
    ) AS i
    ORDER BY 1, 2, 3, 4
) AS a;

-- name: AwaitLocks :exec
-- Takes the event locks of keyed waits about to begin, given as
-- (run_ids[i], names[i], keys[i]), each at its run's workflow and
-- tenant, in the order of EventLocks.
SELECT trellis_event_lock(a.workflow, a.tenant, a.name, a.key)
FROM (
    SELECT DISTINCT r.workflow, r.tenant, i.name, i.key
    FROM (SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@names::text[]) AS name, unnest(@keys::text[]) AS key) AS i
    JOIN trellis_runs r ON r.id = i.run_id
    ORDER BY 1, 2, 3, 4
) AS a;

-- name: TasksAwait :many
-- Makes running wait tasks wait for their events, given as (run_ids[i],
-- steps[i], attempts[i]) waiting for names[i], with keys[i] when
-- keyed[i], until deadlines[i] (NULL for none). A task whose first event
-- was sent already gets its payload as its output, to be woken next
-- (TasksWake); the others get a wait row and, with a deadline, a timer.
-- Every task moved becomes WAITING (a WAITING event) and drops its
-- lease. The caller holds the runs' locks and the keyed waits' event
-- locks. Returns the tasks moved, whether their event had come, and the
-- time of their WAITING event.
WITH input AS (
    SELECT i.run_id, i.step, i.attempt, i.name, i.keyed, i.key, i.deadline, r.workflow, r.tenant, r.created_at
    FROM (
        SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@attempts::int[]) AS attempt,
               unnest(@names::text[]) AS name, unnest(@keyed::boolean[]) AS keyed, unnest(@keys::text[]) AS key,
               -- The zero time (0001-01-01) stands for no deadline.
               nullif(unnest(@deadlines::timestamptz[]), '0001-01-01 00:00:00+00') AS deadline
    ) AS i
    JOIN trellis_runs r ON r.id = i.run_id
), found AS (
    -- The first event sent to the run, or with the key since the run was
    -- created: each read from its index, in id order.
    SELECT i.*, least(
        (SELECT min(e.id) FROM trellis_sent_events e
         WHERE e.run_id = i.run_id AND e.name = i.name),
        (SELECT min(e.id) FROM trellis_sent_events e
         WHERE i.keyed AND e.workflow = i.workflow AND e.tenant = i.tenant AND e.name = i.name AND e.key = i.key
           AND e.key IS NOT NULL AND e.sent_at >= i.created_at)
    ) AS event_id
    FROM input i
), applied AS (
    UPDATE trellis_tasks t
    SET status = 'WAITING', wake_at = NULL, output = e.payload, updated_at = greatest(@now::timestamptz, t.updated_at)
    FROM found f
    LEFT JOIN trellis_sent_events e ON e.id = f.event_id
    WHERE t.run_id = ANY (@run_ids::uuid[])
      AND t.run_id = f.run_id AND t.step = f.step AND t.status = 'RUNNING' AND t.attempt = f.attempt
    RETURNING t.run_id, t.step, t.attempt, f.name::text AS name, f.keyed, f.key, f.deadline, f.workflow, f.tenant,
              (f.event_id IS NOT NULL)::boolean AS received, t.updated_at AS at
), released AS (
    DELETE FROM trellis_leases l USING applied a
    WHERE l.run_id = a.run_id AND l.step = a.step
), events AS (
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'WAITING', attempt, at, 'waiting for event ' || name FROM applied
), waits AS (
    INSERT INTO trellis_event_waits (run_id, step, workflow, tenant, name, key)
    SELECT run_id, step, workflow, tenant, name, CASE WHEN keyed THEN key END FROM applied WHERE NOT received
    ON CONFLICT (run_id, step) DO UPDATE SET workflow = excluded.workflow, tenant = excluded.tenant,
        name = excluded.name, key = excluded.key
), timers AS (
    INSERT INTO trellis_timers (run_id, step, wake_at)
    SELECT run_id, step, deadline FROM applied WHERE NOT received AND deadline IS NOT NULL
    ON CONFLICT (run_id, step) DO UPDATE SET wake_at = excluded.wake_at
)
SELECT run_id, step, attempt, name, received, at FROM applied;

-- name: TasksWake :exec
-- Queues waiting tasks again, woken (trellis_wake), each with its detail.
SELECT trellis_wake(i.run_id, i.step, i.at, i.detail)
FROM (
    SELECT unnest(@run_ids::uuid[]) AS run_id, unnest(@steps::smallint[]) AS step, unnest(@ats::timestamptz[]) AS at,
           unnest(@details::text[]) AS detail
) AS i;

-- name: EventRunsLock :many
-- Locks the runs events are sent to, in id order (RunsLock), and returns
-- their workflows.
SELECT id, workflow FROM trellis_runs WHERE id = ANY (@ids::uuid[]) ORDER BY id FOR NO KEY UPDATE;

-- name: EventInsert :many
-- Stores one sent event, unless it is a repeat: an event with an id
-- (event_id, empty for none) that an event of the same workflow, tenant
-- and name holds already (0021), for which it returns no row.
-- An event sent with a key has the nil run id; one sent to a run has no
-- tenant, key or id.
INSERT INTO trellis_sent_events (workflow, name, run_id, tenant, key, event_id, payload, sent_at)
VALUES (@workflow, @name, nullif(@run_id::uuid, '00000000-0000-0000-0000-000000000000'),
        CASE WHEN @run_id::uuid = '00000000-0000-0000-0000-000000000000' THEN @tenant::text END,
        CASE WHEN @run_id::uuid = '00000000-0000-0000-0000-000000000000' THEN @key::text END,
        CASE WHEN @run_id::uuid = '00000000-0000-0000-0000-000000000000' THEN nullif(@event_id::text, '') END,
        @payload, @sent_at)
ON CONFLICT (workflow, tenant, name, event_id) WHERE event_id IS NOT NULL DO NOTHING
RETURNING id;

-- name: EventDeliverToRun :many
-- Gives the payload of an event sent to a run to the run's tasks waiting
-- for it, and returns them, to be woken (TasksWake). The caller holds the
-- run's lock.
UPDATE trellis_tasks t
SET output = @payload
FROM trellis_event_waits w
WHERE w.run_id = @run_id::uuid AND w.name = @name::text
  AND t.run_id = w.run_id AND t.step = w.step AND t.status = 'WAITING'
RETURNING t.run_id, t.step;

-- name: EventDeliverByKey :many
-- Gives the payload of an event sent with a key to the tasks waiting for
-- it in runs of its workflow and tenant created at or before it was
-- sent, and returns them, to be woken (TasksWake). The caller holds the
-- address's event lock.
UPDATE trellis_tasks t
SET output = @payload
FROM trellis_event_waits w
JOIN trellis_runs r ON r.id = w.run_id
WHERE w.workflow = @workflow::text AND w.tenant = @tenant::text AND w.name = @name::text AND w.key = @key::text
  AND r.created_at <= @sent_at::timestamptz
  AND t.run_id = w.run_id AND t.step = w.step AND t.status = 'WAITING'
RETURNING t.run_id, t.step;

-- name: SentEventsPurge :one
-- Deletes up to lim events sent with a key before sent_before, oldest
-- first (events sent to runs go with their runs). Returns how many.
WITH picked AS (
    SELECT e.id FROM trellis_sent_events e
    WHERE e.key IS NOT NULL AND e.sent_at < @sent_before::timestamptz
    ORDER BY e.sent_at
    LIMIT @lim::bigint
    FOR UPDATE SKIP LOCKED
), deleted AS (
    DELETE FROM trellis_sent_events e WHERE e.id IN (SELECT id FROM picked)
    RETURNING 1
)
SELECT count(*)::int AS purged FROM deleted;
