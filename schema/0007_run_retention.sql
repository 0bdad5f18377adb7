-- An index for retention (store.Retention.PurgeRuns: the leader's purge
-- of old finished runs, and `trellis runs purge`): the runs of one
-- finished status that finished before a cutoff, oldest first. Without
-- it every purge batch would scan the whole history of runs for the few
-- old enough, and so would the leader's check, every minute, that none
-- is; with it a batch reads the oldest entries of its status and stops
-- after the batch, and a check that finds nothing reads one page.
--
-- Partial: a running run (finished_at NULL) has no entry, so creating a
-- run and the updates of a running run (its count of unresolved tasks,
-- once per task) neither write to it nor stop being HOT. The update that
-- ends a run, already not HOT (it changes status; see 0005), adds one
-- entry; a retried run's entry goes when it reopens, and a new one comes
-- when it ends again.
--
-- CREATE INDEX blocks writes to trellis_runs while it builds (migrations
-- run in a transaction, so not CONCURRENTLY): on a large table, apply
-- this migration when a pause in creating and finishing runs is
-- acceptable. It took 1.2 seconds for a million runs (38 MB) on a 2-vCPU
-- machine.

CREATE INDEX trellis_runs_finished ON trellis_runs (status, finished_at)
    WHERE finished_at IS NOT NULL;
