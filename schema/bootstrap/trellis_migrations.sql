-- The record of applied migrations. Not a migration itself: Migrate runs
-- this before any migration (so it must stay idempotent), and sqlc reads
-- it as schema for the bookkeeping queries (queries/migrations.sql).
CREATE TABLE IF NOT EXISTS trellis_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
