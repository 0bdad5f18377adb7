-- Indexes for listing runs (store.Ops.ListRuns, `trellis runs list`):
-- newest first, a page at a time, by keyset (created_at, id), with or
-- without a filter. Each index serves one filter in listing order, so a
-- page reads about as many index entries as it shows; filters combined
-- are served by one of the indexes and a check of the rows it finds.
--
-- created_at, id, workflow, tenant and idempotency_key never change once a
-- run is written, so these indexes keep the updates of a running run (its
-- count of unresolved tasks, once per task) HOT. Indexing status costs
-- more: the update that ends a run changes it, so that one update is not
-- HOT and adds an entry to each index of the table, once per run. The
-- status index is partial: most runs end COMPLETED and never need it (a
-- listing of completed runs finds them through the others at once).
--
-- CREATE INDEX blocks writes to trellis_runs while it builds (migrations
-- run in a transaction, so not CONCURRENTLY): on a large table, apply
-- this migration when a pause in creating and finishing runs is
-- acceptable. The five took 8.5 seconds for a million runs on a 2-vCPU
-- machine.

CREATE INDEX trellis_runs_created ON trellis_runs (created_at, id);

CREATE INDEX trellis_runs_workflow_created ON trellis_runs (workflow, created_at, id);

CREATE INDEX trellis_runs_tenant_created ON trellis_runs (tenant, created_at, id);

CREATE INDEX trellis_runs_status_created ON trellis_runs (status, created_at, id)
    WHERE status <> 'COMPLETED';

-- The unique index on (workflow, tenant, idempotency_key) serves a key
-- only with its workflow and tenant; operators often know just the key.
CREATE INDEX trellis_runs_idempotency_key ON trellis_runs (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
