-- name: EventList :many
-- A run's event log, rows and task slots (schema/0026), in the order it
-- was written.
SELECT id, run_id, step, type, attempt, at, coalesce(detail, '')::text AS detail, wake_at
FROM trellis_event_log
WHERE run_id = @run_id
ORDER BY id;
