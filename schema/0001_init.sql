-- Trellis schema, version 1.
--
-- JSON documents (inputs, outputs, specs) are stored as json, not jsonb:
-- Trellis never queries inside them, and json keeps them byte for byte.
--
-- Hot paths touch small tables only: the ready queue, running leases and
-- durable timers hold live work and are emptied as work moves on, while
-- trellis_tasks keeps the history and has no index but its primary key,
-- so that status changes are HOT updates.
--
-- Lock order, which every writer follows so that concurrent batches never
-- deadlock: a transaction that changes tasks of existing runs first locks
-- those runs' rows in id order; then queue entries and timers; then tasks;
-- then leases. Claims and timer firing take queue entries or timers first
-- and never wait for a run lock.

-- Workflow definitions by version, so that any process can interpret any
-- run, including runs created by other versions of the code.
CREATE TABLE trellis_workflows (
    version    text PRIMARY KEY,
    name       text NOT NULL,
    spec       json NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE trellis_runs (
    id              uuid PRIMARY KEY,
    workflow        text NOT NULL,
    version         text NOT NULL,
    tenant          text NOT NULL,
    idempotency_key text,
    status          text NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
    input           json NOT NULL,
    -- Tasks (the failure handler excluded) not yet COMPLETED or SKIPPED;
    -- the run completes when it reaches zero.
    unresolved      integer NOT NULL,
    -- The step that failed the run, and its error.
    failed_step     integer NOT NULL DEFAULT -1,
    error           text,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
) WITH (fillfactor = 90);

CREATE UNIQUE INDEX trellis_runs_idempotency
    ON trellis_runs (workflow, tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE trellis_tasks (
    -- No foreign key to trellis_runs: tasks are only created with their
    -- run, and the check would cost on every task insert and update.
    run_id         uuid NOT NULL,
    step           smallint NOT NULL,
    kind           smallint NOT NULL, -- 0 code, 1 sleep, 2 failure handler
    status         text NOT NULL CHECK (status IN
                       ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'RETRYING',
                        'COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')),
    -- Step indexes of the parents, whose outputs a claim returns.
    parents        smallint[] NOT NULL DEFAULT '{}',
    -- Parents not yet resolved; the task is queued when it reaches zero.
    pending        smallint NOT NULL,
    -- A plain task always runs its code, so its claim writes STARTED.
    plain          boolean NOT NULL,
    max_attempts   integer NOT NULL,
    attempt        integer NOT NULL DEFAULT 0,
    prior_attempts integer NOT NULL DEFAULT 0,
    worker         text,
    wake_at        timestamptz,
    output         json,
    error          text,
    updated_at     timestamptz NOT NULL,
    finished_at    timestamptz,
    PRIMARY KEY (run_id, step)
) WITH (fillfactor = 70);

-- Tenants get a group: their slot in every block of the ready queue.
CREATE SEQUENCE trellis_tenant_group AS integer MINVALUE 0 START 0 MAXVALUE 1048575;

CREATE TABLE trellis_tenants (
    tenant text PRIMARY KEY,
    grp    integer NOT NULL UNIQUE
);

-- The ready queue, read in qid order. qid = block * 2^20 + tenant group:
-- reading in order takes one task per tenant per block (see
-- runtime/store/fair.go).
CREATE TABLE trellis_ready (
    run_id   uuid NOT NULL,
    step     smallint NOT NULL,
    qid      bigint NOT NULL,
    tenant   text NOT NULL,
    workflow text NOT NULL,
    -- A woken sleep task: it only needs completing.
    wake     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, step)
);

-- The hot tables churn: every task passes through them. Vacuum them
-- after a fixed number of dead rows, not a fraction of their (small) size,
-- and without throttling, so that scans do not wade through dead rows.
ALTER TABLE trellis_ready SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);

CREATE INDEX trellis_ready_order ON trellis_ready (qid);
CREATE INDEX trellis_ready_tenant ON trellis_ready (tenant, qid);

-- Workers and when each last said it was alive. One row per worker, so a
-- heartbeat costs one write however many tasks the worker holds, and never
-- waits on task rows.
CREATE TABLE trellis_workers (
    worker       text PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL
);

-- Running tasks and the workers holding them. A lease is stale when it was
-- claimed before the stale limit and its worker has not heartbeated since.
CREATE TABLE trellis_leases (
    run_id     uuid NOT NULL,
    step       smallint NOT NULL,
    attempt    integer NOT NULL,
    worker     text NOT NULL,
    tenant     text NOT NULL,
    claimed_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, step)
);

-- No index on worker: the table holds only running tasks, and a worker
-- reads its leases once a heartbeat; an index would cost every claim.

ALTER TABLE trellis_leases SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- Durable timers: a sleeping task's wake-up, or a retrying task's next
-- attempt (the task's kind tells which).
CREATE TABLE trellis_timers (
    run_id  uuid NOT NULL,
    step    smallint NOT NULL,
    wake_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, step)
);

CREATE INDEX trellis_timers_due ON trellis_timers (wake_at);

ALTER TABLE trellis_timers SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- The event log. Ids come from one sequence, so a run's events read back
-- in the order they were written.
CREATE TABLE trellis_events (
    run_id  uuid NOT NULL,
    id      bigint GENERATED ALWAYS AS IDENTITY,
    step    smallint NOT NULL,
    type    text NOT NULL,
    attempt integer NOT NULL,
    at      timestamptz NOT NULL,
    detail  text,
    PRIMARY KEY (run_id, id)
);

-- trellis_channel is the NOTIFY channel of this schema, so that several
-- Trellis schemas in one database do not wake each other.
CREATE FUNCTION trellis_channel() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT current_schema() || '.trellis' $$;

-- trellis_enqueue puts tasks on the ready queue with fair queue ids and
-- wakes listening workers. A tenant's next block is the later of the
-- queue's frontier (the block of its smallest qid) and the block after the
-- tenant's last queued task, so an idle tenant joins at the front and a
-- busy one queues behind itself. Callers set the tasks' status and pass
-- each task's tenant and workflow.
CREATE FUNCTION trellis_enqueue(p_runs uuid[], p_steps smallint[], p_wakes boolean[], p_tenants text[], p_workflows text[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    queued bigint;
BEGIN
    IF cardinality(p_runs) IS NULL OR cardinality(p_runs) = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO trellis_tenants (tenant, grp)
    SELECT t.tenant, nextval('trellis_tenant_group')
    FROM (
        SELECT DISTINCT x.tenant FROM unnest(p_tenants) AS x (tenant)
        WHERE NOT EXISTS (SELECT 1 FROM trellis_tenants g WHERE g.tenant = x.tenant)
    ) t
    ON CONFLICT (tenant) DO NOTHING;

    WITH items AS (
        SELECT i.run_id, i.step, i.wake, i.tenant, i.workflow, g.grp,
               row_number() OVER (PARTITION BY i.tenant ORDER BY i.ord) - 1 AS n
        FROM unnest(p_runs, p_steps, p_wakes, p_tenants, p_workflows) WITH ORDINALITY
            AS i (run_id, step, wake, tenant, workflow, ord)
        JOIN trellis_tenants g ON g.tenant = i.tenant
    ), base AS MATERIALIZED (
        -- Once per tenant, before inserting: a lookup per inserted row
        -- would step over every row this statement has inserted so far.
        SELECT t.tenant,
               greatest(
                   coalesce((SELECT min(q.qid) FROM trellis_ready q) / 1048576, 0),
                   coalesce((SELECT max(q.qid) FROM trellis_ready q WHERE q.tenant = t.tenant) / 1048576 + 1, 0)
               ) AS block
        FROM (SELECT DISTINCT tenant FROM items) t
    )
    INSERT INTO trellis_ready (run_id, step, qid, tenant, workflow, wake)
    SELECT i.run_id, i.step, (b.block + i.n) * 1048576 + i.grp, i.tenant, i.workflow, i.wake
    FROM items i
    JOIN base b ON b.tenant = i.tenant
    ON CONFLICT (run_id, step) DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;

    IF queued > 0 THEN
        PERFORM pg_notify(trellis_channel(), 'ready');
    END IF;
    RETURN queued;
END
$$;
