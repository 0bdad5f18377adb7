-- name: PurgeSettings :exec
-- Makes the rest of the transaction plan each statement for its values
-- (a generic plan, which a pooled connection adopts after a few
-- executions, would know neither the limit nor which filters are used),
-- without JIT compilation: a purge batch is a thousand runs, and
-- compiling its expressions would take longer than running them.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('jit', 'off', true);

-- name: RunsPurge :one
-- Deletes up to lim runs (all when lim is null) of one finished status
-- that finished before finished_before, oldest first, with their tasks
-- and events, in one statement. The runs are read from
-- trellis_runs_finished (schema/0007) and locked FOR UPDATE SKIP LOCKED:
-- a run another transaction holds (a retry reopening it, results being
-- recorded) is left for a later purge, and never waited for; a
-- transaction that comes to it second waits, then finds it gone. A run
-- with live work is never taken: a task queued, running, sleeping or
-- retrying, or pending in a run that did not complete (a COMPLETED run's
-- failure handler stays PENDING forever). Tasks and events are deleted
-- through their primary keys, whose first column is the run. Run it
-- under PurgeSettings.
WITH picked AS (
    SELECT r.id
    FROM trellis_runs r
    WHERE r.status = @status::text
      AND r.finished_at < @finished_before::timestamptz
      AND (@workflow::text = '' OR r.workflow = @workflow::text)
      AND (@tenant::text = '' OR r.tenant = @tenant::text)
      AND (@tags::jsonb = '{}'::jsonb OR r.tags @> @tags::jsonb)
      -- Checked run by run, through the tasks' primary key. OFFSET 0
      -- keeps the planner from turning NOT EXISTS into a join, which
      -- may scan every task of the history, each batch, for the few
      -- live ones; and it counts such a check as keeping half the runs,
      -- so it reads the index in order and stops after a batch, rather
      -- than check every run a workflow or tenant filter finds, then
      -- sort them.
      AND NOT EXISTS (
          SELECT 1 FROM trellis_tasks t
          WHERE t.run_id = r.id
            AND (t.status IN ('QUEUED', 'RUNNING', 'SLEEPING', 'RETRYING')
                 OR (t.status = 'PENDING' AND r.status <> 'COMPLETED'))
          OFFSET 0
      )
    ORDER BY r.finished_at
    LIMIT sqlc.narg(lim)::bigint
    FOR UPDATE SKIP LOCKED
), ids AS (
    SELECT coalesce(array_agg(id), '{}')::uuid[] AS ids FROM picked
), tasks AS (
    DELETE FROM trellis_tasks t
    WHERE t.run_id = ANY ((SELECT i.ids FROM ids i)::uuid[])
), events AS (
    DELETE FROM trellis_events e
    WHERE e.run_id = ANY ((SELECT i.ids FROM ids i)::uuid[])
), sent AS (
    -- Events sent to the runs (schema/0013); those sent with keys go by
    -- age (SentEventsPurge).
    DELETE FROM trellis_sent_events s
    WHERE s.run_id = ANY ((SELECT i.ids FROM ids i)::uuid[])
), waits AS (
    DELETE FROM trellis_event_waits x
    WHERE x.run_id = ANY ((SELECT i.ids FROM ids i)::uuid[])
), runs AS (
    DELETE FROM trellis_runs r
    WHERE r.id = ANY ((SELECT i.ids FROM ids i)::uuid[])
    RETURNING r.id
)
SELECT count(*)::int AS purged FROM runs;

-- name: RunsPurgeCount :one
-- How many runs RunsPurge would delete without a limit: the same
-- selection, counted, locking nothing. Counting them all, a join with
-- the tasks (which NOT EXISTS lets the planner choose) may well be the
-- cheaper way.
SELECT count(*)::bigint AS runs
FROM trellis_runs r
WHERE r.status = @status::text
  AND r.finished_at < @finished_before::timestamptz
  AND (@workflow::text = '' OR r.workflow = @workflow::text)
  AND (@tenant::text = '' OR r.tenant = @tenant::text)
  AND (@tags::jsonb = '{}'::jsonb OR r.tags @> @tags::jsonb)
  AND NOT EXISTS (
      SELECT 1 FROM trellis_tasks t
      WHERE t.run_id = r.id
        AND (t.status IN ('QUEUED', 'RUNNING', 'SLEEPING', 'RETRYING')
             OR (t.status = 'PENDING' AND r.status <> 'COMPLETED'))
  );
