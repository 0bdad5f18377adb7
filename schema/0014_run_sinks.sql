-- A run counts its unresolved sinks, not all its unresolved tasks.
--
-- A sink is a task no other task waits for (the failure handler aside,
-- which waits for none and counts for nothing). Every task is a sink or an
-- ancestor of one, and a task is queued only once all its parents are
-- resolved, so the run's sinks are all resolved exactly when all its tasks
-- are. Counting sinks only, recording a result updates the run's row only
-- when the task is a sink: once per run for a chain, rather than once per
-- task (BenchmarkTaskCycle, chain of five: about 10% of the server's CPU
-- for recording results).
--
-- The column is renamed so that processes of an earlier version, which
-- decrement the count for every task, fail (loudly, with nothing lost:
-- their claimed tasks are recovered once they stop) rather than complete
-- runs early. Stop them before applying this migration.

ALTER TABLE trellis_tasks ADD COLUMN sink boolean NOT NULL DEFAULT false;

ALTER TABLE trellis_runs RENAME COLUMN unresolved TO unresolved_sinks;

-- Runs under way now. A finished run gets its sinks marked if it is
-- retried (RunsRecount).
UPDATE trellis_tasks t
SET sink = true
FROM trellis_runs r
WHERE r.status = 'RUNNING' AND t.run_id = r.id AND t.kind <> trellis_kind_on_failure()
  AND NOT EXISTS (SELECT 1 FROM trellis_tasks c WHERE c.run_id = t.run_id AND t.step = ANY (c.parents));

UPDATE trellis_runs r
SET unresolved_sinks = (
    SELECT count(*) FROM trellis_tasks t
    WHERE t.run_id = r.id AND t.sink AND t.status NOT IN ('COMPLETED', 'SKIPPED')
)
WHERE r.status = 'RUNNING';
