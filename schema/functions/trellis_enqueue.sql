-- trellis_enqueue puts tasks on the ready queue (trellis_ready), each in
-- its lane (p_lanes, see trellis_lane), with fair queue ids, and wakes
-- listening workers (trellis_channel). Callers set the tasks' status and
-- pass each task's tenant and workflow; p_wakes marks tasks that only
-- need completing (trellis_woken).
--
-- qid = block * 2^20 + the tenant's group (trellis_tenants, given here
-- the first time a tenant is met). A task's block is the later of the
-- queue's frontier (the block of its smallest qid) and the block after
-- its tenant's last queued task of its own or a higher lane, so an idle
-- tenant joins at the front, a busy one queues behind itself, and a task
-- never queues behind its tenant's lower lanes. Reading the queue in qid
-- order then takes one task per tenant and lane per block
-- (runtime/store/memstore/fair.go does the same in memory). The tenants
-- and lanes of the tasks are placed from the queue as it was before the
-- call: tasks of one tenant in different lanes queued by one call do not
-- queue behind each other. Tasks already queued are left as they are.
--
-- Each entry carries its task's worker labels (trellis_tasks.labels,
-- schema/0024), which claims compare with the claiming worker's: every
-- path that queues a task queues it here, so none can lose them.
--
-- Called by trellis_admit (tasks ready for the first time), and directly
-- for tasks queued again (retries, woken sleeps, recovered leases, the
-- failure handler; queries/leases.sql, tasks.sql, timers.sql).
--
-- Each entry carries its run's workflow version (schema/0025), read here
-- from the run, so that every path that queues a task fills it: claims
-- take only the versions a worker serves.

CREATE OR REPLACE FUNCTION trellis_enqueue(p_runs uuid[], p_steps smallint[], p_wakes boolean[], p_tenants text[], p_workflows text[], p_lanes smallint[])
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
        -- The version by a lookup of each run by its primary key, never a
        -- join the planner could turn into a scan of every run.
        SELECT i.run_id, i.step, i.wake, i.tenant, i.workflow,
               (SELECT r.version FROM trellis_runs r WHERE r.id = i.run_id) AS version, i.lane, g.grp,
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
    INSERT INTO trellis_ready (run_id, step, qid, tenant, workflow, version, wake, lane, labels)
    SELECT i.run_id, i.step, (b.block + i.n) * 1048576 + i.grp, i.tenant, i.workflow, i.version, i.wake, i.lane, t.labels
    FROM items i
    JOIN base b ON b.tenant = i.tenant AND b.lane = i.lane
    LEFT JOIN trellis_tasks t ON t.run_id = i.run_id AND t.step = i.step
    ON CONFLICT (run_id, step) DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;

    IF queued > 0 THEN
        PERFORM pg_notify(trellis_channel(), 'ready');
    END IF;
    RETURN queued;
END
$$;
