-- name: WorkflowSave :exec
-- Stores a version unless it exists. created_at is the caller's time, or
-- the database's when the caller gives none.
INSERT INTO trellis_workflows (version, name, spec, created_at)
VALUES (@version, @name, @spec, coalesce(sqlc.narg(saved_at)::timestamptz, now()))
ON CONFLICT (version) DO NOTHING;

-- name: WorkflowLoad :one
SELECT version, name, spec, created_at FROM trellis_workflows WHERE version = @version;

-- name: WorkflowVersionsOf :many
-- The stored versions of the named workflows, without their specs: what
-- an engine compares with the versions it registered (runtime/serving.go).
SELECT version, name, created_at FROM trellis_workflows WHERE name = ANY (@names::text[]) ORDER BY name, version;
