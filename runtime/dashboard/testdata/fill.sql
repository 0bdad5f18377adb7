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

-- The copies' events, rows and slots alike (the view trellis_event_log,
-- schema/0026), each with a new id drawn in the order of the copies'
-- creation and then of the template's log, so that each copy's log keeps
-- its order.
CREATE TEMP TABLE fill_events ON COMMIT DROP AS
SELECT f.id AS run_id, e.id AS template_id, e.step, e.type, e.attempt, f.created_at + (e.at - r.created_at) AS at,
       e.detail, f.created_at + (e.wake_at - r.created_at) AS wake_at, nextval('trellis_events_id_seq') AS id
FROM fill_runs f
JOIN fill_template t ON t.status = f.status
JOIN trellis_runs r ON r.id = t.id
JOIN trellis_event_log e ON e.run_id = r.id
ORDER BY f.created_at, e.id;
CREATE INDEX ON fill_events (run_id, template_id);
ANALYZE fill_events;

INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, attempt, prior_attempts,
                           output, error, updated_at, finished_at,
                           log_completed, log_completed_at, log_completed_attempt, log_started, log_started_at, log_started_attempt,
                           log_queued, log_queued_at, log_queued_attempt)
SELECT f.id, k.step, k.kind, k.status, k.parents, k.pending, k.plain, k.max_attempts, k.attempt, k.prior_attempts,
       k.output, k.error, f.created_at + (k.updated_at - r.created_at), f.created_at + (k.finished_at - r.created_at),
       c.id, c.at, c.attempt, s.id, s.at, s.attempt, q.id, q.at, q.attempt
FROM fill_runs f
JOIN fill_template t ON t.status = f.status
JOIN trellis_runs r ON r.id = t.id
JOIN trellis_tasks k ON k.run_id = r.id
LEFT JOIN fill_events c ON c.run_id = f.id AND c.template_id = k.log_completed
LEFT JOIN fill_events s ON s.run_id = f.id AND s.template_id = k.log_started
LEFT JOIN fill_events q ON q.run_id = f.id AND q.template_id = k.log_queued;

-- The events the templates hold as rows, as rows, with their new ids.
INSERT INTO trellis_events (id, run_id, step, type, attempt, at, detail, wake_at) OVERRIDING SYSTEM VALUE
SELECT e.id, e.run_id, e.step, e.type, e.attempt, e.at, e.detail, e.wake_at
FROM fill_events e
WHERE e.template_id IN (SELECT x.id FROM trellis_events x JOIN fill_template t ON t.id = x.run_id)
ORDER BY e.id;

COMMIT;
VACUUM ANALYZE trellis_runs;
VACUUM ANALYZE trellis_tasks;
VACUUM ANALYZE trellis_events;
