-- fill.sql adds :runs synthetic finished runs of the ops workflow to the
-- schema on the search path, spread over the 30 days before now, one in
-- 50 failed: a history to time the dashboard against (see docs/performance.md,
-- The dashboard at a million runs). Run testdata/opswalk in the schema first: it stores the
-- workflow version and leaves real runs, of which this copies a completed
-- one and a failed one, with their tasks and event logs, shifted to each
-- new run's creation time. Inputs follow opswalk's (labels in turn, every
-- failed run a signup; tenants tenant-0 to tenant-9).
--
--   psql "$URL" -v runs=998000 -f runtime/dashboard/testdata/fill.sql
\set ON_ERROR_STOP on
BEGIN;

CREATE TEMP TABLE fill_template ON COMMIT DROP AS
SELECT s.status, (SELECT r.id FROM trellis_runs r WHERE r.status = s.status ORDER BY r.created_at LIMIT 1) AS id
FROM (VALUES ('COMPLETED'), ('FAILED')) AS s (status);

CREATE TEMP TABLE fill_runs ON COMMIT DROP AS
SELECT gen_random_uuid() AS id, i,
       CASE WHEN i % 50 = 7 THEN 'FAILED' ELSE 'COMPLETED' END AS status,
       now() - interval '30 days' + i * (interval '30 days' / :runs) AS created_at
FROM generate_series(1, :runs) AS i;

INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, failed_step, error, created_at, finished_at)
SELECT f.id, r.workflow, r.version, 'tenant-' || (f.i / 1000 % 10), f.status,
       json_build_object('mode', CASE WHEN f.status = 'FAILED' THEN 'fail' ELSE 'ok' END,
                         'label', (ARRAY['checkout', 'refund', 'signup', 'renewal', 'upgrade'])[f.i % 5 + 1]),
       r.unresolved_sinks, r.failed_step, r.error, f.created_at, f.created_at + (r.finished_at - r.created_at)
FROM fill_runs f
JOIN fill_template t ON t.status = f.status
JOIN trellis_runs r ON r.id = t.id;

INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, attempt, prior_attempts,
                           output, error, updated_at, finished_at)
SELECT f.id, k.step, k.kind, k.status, k.parents, k.pending, k.plain, k.max_attempts, k.attempt, k.prior_attempts,
       k.output, k.error, f.created_at + (k.updated_at - r.created_at), f.created_at + (k.finished_at - r.created_at)
FROM fill_runs f
JOIN fill_template t ON t.status = f.status
JOIN trellis_runs r ON r.id = t.id
JOIN trellis_tasks k ON k.run_id = r.id;

INSERT INTO trellis_events (run_id, step, type, attempt, at, detail, wake_at)
SELECT f.id, e.step, e.type, e.attempt, f.created_at + (e.at - r.created_at), e.detail, f.created_at + (e.wake_at - r.created_at)
FROM fill_runs f
JOIN fill_template t ON t.status = f.status
JOIN trellis_runs r ON r.id = t.id
JOIN trellis_events e ON e.run_id = r.id
ORDER BY f.created_at, e.id;

COMMIT;
VACUUM ANALYZE trellis_runs;
VACUUM ANALYZE trellis_tasks;
VACUUM ANALYZE trellis_events;
