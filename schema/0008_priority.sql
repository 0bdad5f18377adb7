-- Run priorities, and lanes in the ready queue (runtime/store/priority.go
-- says the rule; the memory store implements the same).
--
-- A run has a priority, 1 (low) to 3 (high), 2 unless its trigger says
-- otherwise. Each queued task is in a lane, trellis_lane(priority, in
-- progress): the run's root tasks, queued when it is created, in its new
-- lane; every task queued later in its in-progress lane, one above. A
-- task's block is the later of the queue's frontier and the block after
-- its tenant's last queued task of its own or a higher lane, so it never
-- queues behind the tenant's lower lanes, and each round (block) takes at
-- most one task per lane of a tenant.
--
-- Adding a column with a constant default rewrites nothing, and
-- trellis_runs gains no index: the updates of a running run stay HOT.

ALTER TABLE trellis_runs ADD COLUMN priority smallint NOT NULL DEFAULT 2;

-- trellis_lane is the lane of a task of a run of the given priority;
-- lanes run from 0 to 7 (store.Lanes), higher first.
CREATE FUNCTION trellis_lane(p_priority smallint, p_in_progress boolean) RETURNS smallint
LANGUAGE sql IMMUTABLE AS $$ SELECT (2 * p_priority + CASE WHEN p_in_progress THEN 1 ELSE 0 END)::smallint $$;

-- Tasks queued before this migration count as in progress at normal
-- priority. The default goes once they have it: every insert names the
-- lane.
ALTER TABLE trellis_ready ADD COLUMN lane smallint NOT NULL DEFAULT 5 CHECK (lane BETWEEN 0 AND 7);
ALTER TABLE trellis_ready ALTER COLUMN lane DROP DEFAULT;

-- Claims read the queue in qid order, and within a round (tasks of one
-- tenant sharing a qid) higher lanes first.
DROP INDEX trellis_ready_order;
CREATE INDEX trellis_ready_order ON trellis_ready (qid, lane DESC);

-- Finding a tenant's last queued task of a lane reads one index entry.
DROP INDEX trellis_ready_tenant;
CREATE INDEX trellis_ready_tenant ON trellis_ready (tenant, lane, qid);

-- trellis_enqueue puts tasks on the ready queue, each in its lane
-- (p_lanes), with fair queue ids, and wakes listening workers. The
-- tenants and lanes of the tasks are placed from the queue as it was
-- before the call: tasks of one tenant in different lanes queued by one
-- call do not queue behind each other.
CREATE FUNCTION trellis_enqueue(p_runs uuid[], p_steps smallint[], p_wakes boolean[], p_tenants text[], p_workflows text[], p_lanes smallint[])
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
        SELECT i.run_id, i.step, i.wake, i.tenant, i.workflow, i.lane, g.grp,
               row_number() OVER (PARTITION BY i.tenant, i.lane ORDER BY i.ord) - 1 AS n
        FROM unnest(p_runs, p_steps, p_wakes, p_tenants, p_workflows, p_lanes) WITH ORDINALITY
            AS i (run_id, step, wake, tenant, workflow, lane, ord)
        JOIN trellis_tenants g ON g.tenant = i.tenant
    ), base AS MATERIALIZED (
        -- Once per tenant and lane, before inserting: a lookup per
        -- inserted row would step over every row this statement has
        -- inserted so far. The tenant's last block in each lane at or
        -- above the task's is one index entry. (A constant array of the
        -- lanes, not generate_series, whose row count the planner would
        -- guess at 1,000 and then compile the statement with JIT, which
        -- costs more than running it.)
        SELECT t.tenant, t.lane,
               greatest(
                   coalesce((SELECT min(q.qid) FROM trellis_ready q) / 1048576, 0),
                   coalesce((
                       SELECT max((SELECT max(q.qid) FROM trellis_ready q WHERE q.tenant = t.tenant AND q.lane = l.lane))
                       FROM unnest('{0,1,2,3,4,5,6,7}'::smallint[]) AS l (lane)
                       WHERE l.lane >= t.lane
                   ) / 1048576 + 1, 0)
               ) AS block
        FROM (SELECT DISTINCT tenant, lane FROM items) t
    )
    INSERT INTO trellis_ready (run_id, step, qid, tenant, workflow, wake, lane)
    SELECT i.run_id, i.step, (b.block + i.n) * 1048576 + i.grp, i.tenant, i.workflow, i.wake, i.lane
    FROM items i
    JOIN base b ON b.tenant = i.tenant AND b.lane = i.lane
    ON CONFLICT (run_id, step) DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;

    IF queued > 0 THEN
        PERFORM pg_notify(trellis_channel(), 'ready');
    END IF;
    RETURN queued;
END
$$;

-- The signature before lanes, for processes of the previous version still
-- running while this migration is applied: their tasks go to the
-- in-progress lane of normal priority.
CREATE OR REPLACE FUNCTION trellis_enqueue(p_runs uuid[], p_steps smallint[], p_wakes boolean[], p_tenants text[], p_workflows text[])
RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT trellis_enqueue(p_runs, p_steps, p_wakes, p_tenants, p_workflows,
                           array_fill(trellis_lane(2::smallint, true), ARRAY[coalesce(cardinality(p_runs), 0)]))
$$;
