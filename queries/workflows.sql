-- name: WorkflowSave :exec
INSERT INTO trellis_workflows (version, name, spec)
VALUES (@version, @name, @spec)
ON CONFLICT (version) DO NOTHING;

-- name: WorkflowLoad :one
SELECT version, name, spec FROM trellis_workflows WHERE version = @version;
