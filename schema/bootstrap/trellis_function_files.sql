-- The record of applied function files (schema/functions). Not a
-- migration: Migrate runs this before any migration (so it must stay
-- idempotent), and sqlc reads it as schema for the bookkeeping queries
-- (queries/migrations.sql). One row per file: its checksum when it was
-- last applied, and the FunctionsVersion of the binary that applied it.
CREATE TABLE IF NOT EXISTS trellis_function_files (
    name       text PRIMARY KEY,
    checksum   text NOT NULL,
    version    integer NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
