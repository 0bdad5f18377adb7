-- Concurrency limits by key (store.Limit says the rule; the memory store
-- implements the same): at most max tasks sharing a key are in progress at
-- once, across every worker. A task takes a slot of its key when it is
-- first queued (trellis_admit), keeps it while it runs, waits to retry or
-- is requeued after its worker died, and gives it back when it ends
-- (trellis_release, a trigger). A task that finds no free slot waits in
-- its key's line, QUEUED but off the ready queue, and is queued as slots
-- come back, oldest first. So claims never see a task they may not run:
-- the claim queries are unchanged, and cost what they did.

-- A task's limit, set when its run is created; NULL for none.
ALTER TABLE trellis_tasks ADD COLUMN limit_key text, ADD COLUMN limit_max integer;

-- Slots held per key. A row exists while its key has a slot held or a
-- task waiting, and a little after: the leader's Maintain deletes idle
-- ones. Every change to a key's slots or line locks its row first.
CREATE TABLE trellis_limits (
    key  text PRIMARY KEY,
    held integer NOT NULL CHECK (held >= 0),
    -- The seq of the key's first live waiting task or below it: every
    -- entry before it was queued or left. Reading the line from here
    -- does not step over the dead index entries a busy line leaves at
    -- its front, which a read from the start would, until vacuumed,
    -- again and again.
    head bigint NOT NULL DEFAULT 0
);

ALTER TABLE trellis_limits SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- Tasks waiting for a slot, in line per key (seq order), with what
-- queueing them needs.
CREATE TABLE trellis_waiting (
    run_id   uuid NOT NULL,
    step     smallint NOT NULL,
    key      text NOT NULL,
    seq      bigint GENERATED ALWAYS AS IDENTITY,
    max      integer NOT NULL,
    tenant   text NOT NULL,
    workflow text NOT NULL,
    lane     smallint NOT NULL,
    PRIMARY KEY (run_id, step)
);

CREATE INDEX trellis_waiting_line ON trellis_waiting (key, seq);

ALTER TABLE trellis_waiting SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- trellis_admit queues tasks that become ready for the first time (roots
-- of new runs, children whose parents resolved, steps of retried runs):
-- those without a limit (p_keys[i] NULL) at once; each of the others when
-- its key has a free slot and nobody waits for one, taking the slot, and
-- in its key's line otherwise. Callers set the tasks' status (QUEUED, for
-- waiting tasks too). It returns how many it put on the ready queue.
CREATE FUNCTION trellis_admit(p_runs uuid[], p_steps smallint[], p_tenants text[], p_workflows text[], p_lanes smallint[],
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

-- trellis_release gives back the slot of a task that ended, or takes it
-- out of its key's line, and queues the tasks waiting longest for the
-- freed slot.
CREATE FUNCTION trellis_release() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    h integer;
    first bigint;
    w record;
BEGIN
    DELETE FROM trellis_waiting WHERE run_id = NEW.run_id AND step = NEW.step;
    IF FOUND THEN
        RETURN NULL; -- it waited, and held no slot
    END IF;
    UPDATE trellis_limits SET held = held - 1 WHERE key = NEW.limit_key RETURNING held, head INTO h, first;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    FOR w IN
        SELECT * FROM trellis_waiting WHERE key = NEW.limit_key AND seq >= first ORDER BY seq LIMIT 100
    LOOP
        EXIT WHEN h >= w.max;
        first := w.seq + 1;
        DELETE FROM trellis_waiting WHERE run_id = w.run_id AND step = w.step;
        CONTINUE WHEN NOT FOUND; -- its run ended meanwhile
        h := h + 1;
        PERFORM trellis_enqueue(ARRAY[w.run_id], ARRAY[w.step], ARRAY[false], ARRAY[w.tenant], ARRAY[w.workflow], ARRAY[w.lane]);
    END LOOP;
    UPDATE trellis_limits SET held = h, head = first WHERE key = NEW.limit_key;
    RETURN NULL;
END
$$;

-- Only tasks with a limit that end fire it: the condition is checked as
-- each row is updated, before any call, so other updates pay nothing but
-- the check.
CREATE TRIGGER trellis_release AFTER UPDATE OF status ON trellis_tasks
FOR EACH ROW
WHEN (NEW.limit_key IS NOT NULL
      AND NEW.status IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')
      AND OLD.status NOT IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED'))
EXECUTE FUNCTION trellis_release();
