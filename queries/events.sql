-- name: EventList :many
SELECT id, run_id, step, type, attempt, at, coalesce(detail, '')::text AS detail, wake_at
FROM trellis_events
WHERE run_id = @run_id
ORDER BY id;
