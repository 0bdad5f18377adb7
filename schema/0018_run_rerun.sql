-- When a run was last rerun from a step (runtime.Engine.RerunRun): NULL
-- for a run never rerun. A rerun reuses its run, so the run's record says
-- that its result may differ from one a caller read before (the event log
-- says which steps ran again), and a map step rerun starts its items
-- again rather than keep those its earlier executions completed.
-- A nullable column without a default: adding it rewrites nothing.
ALTER TABLE trellis_runs ADD COLUMN rerun_at timestamptz;
