-- Claims by workflow version (issue 31): a worker claims only the tasks of
-- the workflow versions it serves (store.Claim.Versions), so that a run is
-- never run by code of another version of its workflow. The ready queue
-- keeps each task's version (its run's), which trellis_enqueue fills from
-- the run; the claim filters on it as it filtered on the workflow's name.
-- No index: the claim reads the queue in qid order and filters, as before.

ALTER TABLE trellis_ready ADD COLUMN version text;
UPDATE trellis_ready q SET version = r.version FROM trellis_runs r WHERE r.id = q.run_id;
-- A queue entry of a run that no longer exists cannot be claimed anyway.
DELETE FROM trellis_ready WHERE version IS NULL;
ALTER TABLE trellis_ready ALTER COLUMN version SET NOT NULL;
