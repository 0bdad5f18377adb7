-- Migration bookkeeping. The table is created by
-- schema/bootstrap/trellis_migrations.sql; the migrations themselves are
-- schema/NNNN_*.sql, run as they are.

-- name: MigrationsTableExists :one
SELECT (to_regclass('trellis_migrations') IS NOT NULL)::boolean AS exists;

-- name: MigrationsApplied :many
SELECT version, applied_at FROM trellis_migrations ORDER BY version;

-- name: MigrationRecord :exec
INSERT INTO trellis_migrations (version, name) VALUES (@version, @name);
