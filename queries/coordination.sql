-- name: AdvisoryLock :exec
-- Waits for the session advisory lock of the given name. A lock's key is
-- a hash of the schema and its name, so that Trellis schemas sharing a
-- database do not share locks; each lock's name is one constant in Go,
-- passed to every query that takes or releases it (the lock naming the
-- leader is a constant prefix and the worker's id; OpsWorkers, in
-- ops.sql, computes its key the same way). (ClaimLock, in ready.sql, is
-- a transaction lock with its name in the query.)
SELECT pg_advisory_lock(hashtextextended(current_schema() || '.trellis.' || @name::text, 0));

-- name: AdvisoryTryLock :one
-- Takes the session advisory lock of the given name if it is free.
SELECT pg_try_advisory_lock(hashtextextended(current_schema() || '.trellis.' || @name::text, 0))::boolean AS locked;

-- name: AdvisoryUnlock :exec
-- Releases the session advisory lock of the given name.
SELECT pg_advisory_unlock(hashtextextended(current_schema() || '.trellis.' || @name::text, 0));

-- name: NotifyChannel :one
-- The NOTIFY channel of this schema, to LISTEN on.
SELECT trellis_channel()::text AS channel;

-- name: HotTablesToVacuum :many
-- Those of this schema's hot tables (the ones every task passes through)
-- holding more than dead_rows dead rows, by the statistics collector's
-- count (the n_dead_tup of pg_stat_user_tables).
SELECT c.relname::text AS name
FROM pg_catalog.pg_class c
WHERE c.relnamespace = current_schema()::regnamespace
  AND c.relname IN ('trellis_ready', 'trellis_leases', 'trellis_timers', 'trellis_workers', 'trellis_limits', 'trellis_waiting',
                    'trellis_rates', 'trellis_paced')
  AND pg_stat_get_dead_tuples(c.oid) > @dead_rows::bigint
ORDER BY c.relname;

-- name: TablesBehind :many
-- Those of this schema's large tables whose statistics or dead rows are
-- twice past autovacuum's default thresholds (analyze after 50 + 10% of
-- the rows changed, vacuum after 50 + 20% dead): autovacuum is off for
-- them, or behind. A table never analyzed counts as empty.
SELECT c.relname::text AS name,
       (pg_stat_get_dead_tuples(c.oid) > 2 * (50 + 0.2 * greatest(c.reltuples, 0)))::boolean AS vacuum,
       (pg_stat_get_mod_since_analyze(c.oid) > 2 * (50 + 0.1 * greatest(c.reltuples, 0)))::boolean AS analyze
FROM pg_catalog.pg_class c
WHERE c.relnamespace = current_schema()::regnamespace
  AND c.relname IN ('trellis_runs', 'trellis_tasks', 'trellis_events')
ORDER BY c.relname;

-- name: RatesForget :exec
-- Deletes the rows of rate keys at rest (due since before the given
-- time), which behave as keys without a row, skipping those another
-- transaction holds (it may be pacing a task).
DELETE FROM trellis_rates r
WHERE r.key IN (
    SELECT i.key FROM trellis_rates i
    WHERE i.tat < @before
    FOR UPDATE SKIP LOCKED
);

-- name: LimitsForget :exec
-- Deletes the rows of limit keys with no slot held and nobody waiting,
-- skipping those another transaction holds (it may be taking a slot).
DELETE FROM trellis_limits l
WHERE l.key IN (
    SELECT i.key FROM trellis_limits i
    WHERE i.held = 0 AND NOT EXISTS (SELECT 1 FROM trellis_waiting w WHERE w.key = i.key)
      AND NOT EXISTS (SELECT 1 FROM trellis_run_waiting w WHERE w.key = i.key)
    FOR UPDATE SKIP LOCKED
);
