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
