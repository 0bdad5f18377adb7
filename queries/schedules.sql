-- name: SchedulePut :one
-- Creates a schedule, or updates the one of the same workflow and name
-- when its settings differ (inputs compared as JSON values); returns
-- nothing when they are the same. created tells an insert from an
-- update (xmax is 0 only on a row this statement inserted).
INSERT INTO trellis_schedules AS s (workflow, name, cron, timezone, input, tenant, created_at, updated_at)
VALUES (@workflow, @name, @cron, @timezone, @input, @tenant, @now::timestamptz, @now::timestamptz)
ON CONFLICT (workflow, name) DO UPDATE
SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, input = EXCLUDED.input, tenant = EXCLUDED.tenant,
    updated_at = EXCLUDED.updated_at
WHERE (s.cron, s.timezone, s.tenant, s.input::jsonb)
      IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.tenant, EXCLUDED.input::jsonb)
RETURNING s.workflow, s.name, s.cron, s.timezone, s.input, s.tenant, s.paused, s.created_at, s.updated_at,
    (s.xmax::text = '0')::boolean AS created;

-- name: ScheduleGet :one
SELECT workflow, name, cron, timezone, input, tenant, paused, created_at, updated_at
FROM trellis_schedules WHERE workflow = @workflow AND name = @name;

-- name: SchedulesList :many
-- The schedules of the workflows named, or of all when none is.
SELECT workflow, name, cron, timezone, input, tenant, paused, created_at, updated_at
FROM trellis_schedules
WHERE cardinality(@workflows::text[]) = 0 OR workflow = ANY(@workflows::text[])
ORDER BY workflow, name;

-- name: ScheduleDelete :execrows
DELETE FROM trellis_schedules WHERE workflow = @workflow AND name = @name;

-- name: SchedulePause :one
-- Pauses or resumes a schedule; updated_at moves only when the state
-- changes.
UPDATE trellis_schedules
SET paused = @paused::boolean,
    updated_at = CASE WHEN paused = @paused::boolean THEN updated_at ELSE @now::timestamptz END
WHERE workflow = @workflow AND name = @name
RETURNING workflow, name, cron, timezone, input, tenant, paused, created_at, updated_at;
