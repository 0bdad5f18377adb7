-- Routing steps to workers by labels (a step's runsOn; store.Claim says
-- the rule, the memory store implements the same). A task's labels are
-- the worker labels it needs, in their stored form ("key=value",
-- sorted), set when the task is created and never changed; NULL for a
-- task that needs none, so that workflows without runsOn store and pay
-- nothing. trellis_enqueue copies them into the ready queue with every
-- entry, whichever path queues the task, and a claim takes an entry only
-- for a worker whose labels contain them (q.labels <@ the worker's).
-- Workers announce their labels (store.AnnounceWorker), for operators and
-- for telling queued work that no live worker can claim (unserved).
--
-- Adding nullable columns without a default rewrites nothing and holds
-- each table's lock for an instant. Processes of the previous release
-- neither write nor read the columns: they claim labelled tasks as any
-- other, so upgrade every worker before deploying workflows with runsOn.

ALTER TABLE trellis_tasks ADD COLUMN labels text[];
ALTER TABLE trellis_ready ADD COLUMN labels text[];
ALTER TABLE trellis_workers ADD COLUMN labels text[] NOT NULL DEFAULT '{}';

-- The labelled entries of the ready queue, for telling the unserved
-- (queries/ops.sql OpsUnserved) without reading the whole queue; an entry
-- without labels adds nothing to it. The queue is small (live work
-- only), so the build is short.
CREATE INDEX trellis_ready_labelled ON trellis_ready (workflow) WHERE labels IS NOT NULL;
