-- Indexes for the dashboard's runs list, which shows child runs (the items
-- of map steps, the runs of child workflow steps) beneath their parents.
--
-- trellis_runs_top_level_created lists the runs no step started
-- (store.RunQuery.TopLevel): newest first, a page at a time, by keyset
-- (created_at, id). Without it a page of top-level runs read through
-- trellis_runs_created would step over every child run created since the
-- page's last run: the 10,000 items of one map step between two top-level
-- runs. created_at, id and parent_run_id never change once a run is
-- written, so it keeps the updates of a running run HOT, as those of 0005
-- do.
--
-- trellis_runs_parent_status counts a run's child runs by step and status
-- (store.Ops.ChildRunCounts and ChildRunPreviews) from the index alone,
-- rather than a row of the table per child run: 10,000 items counted in
-- about 1 ms rather than 5. Only the update that ends a child run changes
-- an entry, and that update changes status, which 0005 indexes already,
-- so it was never HOT.
CREATE INDEX trellis_runs_top_level_created ON trellis_runs (created_at, id)
    WHERE parent_run_id IS NULL;

CREATE INDEX trellis_runs_parent_status ON trellis_runs (parent_run_id, parent_step, status)
    WHERE parent_run_id IS NOT NULL;
