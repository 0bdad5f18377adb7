-- trellis_admit queues tasks that become ready for the first time (roots
-- of new runs, children whose parents resolved, steps of retried runs;
-- queries/tasks.sql): those without a concurrency limit (p_keys[i] NULL)
-- at once; each of the others when its key has a free slot and nobody
-- waits for one, taking the slot, and in its key's line
-- (trellis_waiting) otherwise. Callers set the tasks' status (QUEUED,
-- for waiting tasks too). It returns how many it put on the ready queue.
--
-- Concurrency limits (store.Limit says the rule; the memory store
-- implements the same): at most max tasks sharing a key are in progress
-- at once, across every worker. A task takes a slot here, keeps it while
-- it runs, waits to retry or is requeued after its worker died, and gives
-- it back when it ends (trellis_release). So claims never see a task they
-- may not run.

CREATE OR REPLACE FUNCTION trellis_admit(p_runs uuid[], p_steps smallint[], p_tenants text[], p_workflows text[], p_lanes smallint[],
                              p_keys text[], p_maxes integer[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r_runs uuid[];
    r_steps smallint[];
    r_tenants text[];
    r_workflows text[];
    r_lanes smallint[];
BEGIN
    IF cardinality(p_runs) IS NULL OR cardinality(p_runs) = 0 THEN
        RETURN 0;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM unnest(p_keys) AS k (key) WHERE k.key IS NOT NULL) THEN
        RETURN trellis_enqueue(p_runs, p_steps, array_fill(false, ARRAY[cardinality(p_runs)]), p_tenants, p_workflows, p_lanes);
    END IF;

    -- Get or create each key's row, locked, in key order, so that
    -- concurrent calls sharing keys wait for each other instead of
    -- deadlocking.
    INSERT INTO trellis_limits AS l (key, held)
    SELECT DISTINCT k.key, 0 FROM unnest(p_keys) AS k (key) WHERE k.key IS NOT NULL ORDER BY 1
    ON CONFLICT (key) DO UPDATE SET held = l.held;

    WITH items AS (
        SELECT i.*, row_number() OVER (PARTITION BY i.key ORDER BY i.ord) AS rn
        FROM unnest(p_runs, p_steps, p_tenants, p_workflows, p_lanes, p_keys, p_maxes) WITH ORDINALITY
            AS i (run_id, step, tenant, workflow, lane, key, max, ord)
    ), decided AS (
        -- A task takes a slot when nobody waits for one (the line goes
        -- first) and the slots taken before it leave one free.
        SELECT i.*, i.key IS NULL OR (
                   NOT EXISTS (SELECT 1 FROM trellis_waiting w WHERE w.key = i.key AND w.seq >= l.head)
                   AND l.held + i.rn <= i.max
               ) AS granted
        FROM items i
        LEFT JOIN trellis_limits l ON l.key = i.key
    ), waiting AS (
        INSERT INTO trellis_waiting (run_id, step, key, max, tenant, workflow, lane)
        SELECT run_id, step, key, max, tenant, workflow, lane FROM decided WHERE NOT granted ORDER BY ord
    ), taken AS (
        UPDATE trellis_limits l SET held = l.held + g.n
        FROM (SELECT key, count(*) AS n FROM decided WHERE granted AND key IS NOT NULL GROUP BY key) g
        WHERE l.key = g.key
    )
    SELECT array_agg(run_id ORDER BY ord), array_agg(step ORDER BY ord), array_agg(tenant ORDER BY ord),
           array_agg(workflow ORDER BY ord), array_agg(lane ORDER BY ord)
    INTO r_runs, r_steps, r_tenants, r_workflows, r_lanes
    FROM decided WHERE granted;

    RETURN trellis_enqueue(r_runs, r_steps, array_fill(false, ARRAY[coalesce(cardinality(r_runs), 0)]), r_tenants, r_workflows, r_lanes);
END
$$;
