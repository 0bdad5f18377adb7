-- name: MigrationsTableExists :one
-- Whether the bookkeeping table exists (Migrate creates it from
-- schema/bootstrap/trellis_migrations.sql before the first migration).
SELECT (to_regclass('trellis_migrations') IS NOT NULL)::boolean AS exists;

-- name: MigrationsApplied :many
-- The migrations applied, and when.
SELECT version, applied_at FROM trellis_migrations ORDER BY version;

-- name: MigrationRecord :exec
-- Records a migration as applied, in the migration's own transaction.
INSERT INTO trellis_migrations (version, name) VALUES (@version, @name);

-- name: FunctionFilesTableExists :one
-- Whether the function files' bookkeeping table exists (Migrate creates
-- it from schema/bootstrap/trellis_function_files.sql).
SELECT (to_regclass('trellis_function_files') IS NOT NULL)::boolean AS exists;

-- name: FunctionFilesApplied :many
-- The function files applied: each one's checksum then, the
-- FunctionsVersion of the binary that applied it, and when.
SELECT name, checksum, version, applied_at FROM trellis_function_files ORDER BY name;

-- name: FunctionFileRecord :exec
-- Records a function file as applied, in the transaction that applied it.
INSERT INTO trellis_function_files (name, checksum, version) VALUES (@name, @checksum, @version)
ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, version = excluded.version, applied_at = now();

-- name: FunctionFilesKeep :exec
-- Marks the function files as those of a binary of the given
-- FunctionsVersion, and forgets the files it does not have (their
-- functions are dropped by retired.sql).
WITH forgotten AS (
    DELETE FROM trellis_function_files WHERE NOT (name = ANY (@names::text[]))
)
UPDATE trellis_function_files SET version = @version WHERE name = ANY (@names::text[]) AND version <> @version;
