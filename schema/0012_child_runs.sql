-- Child runs: runs a task starts and waits for (map elements, child
-- workflows). The task waits WAITING with the number of child runs still
-- to complete in awaiting; a child run that ends counts it down and
-- wakes the task (queued, woken) when the last one completes or as soon
-- as one ends otherwise. A run that ends otherwise than completed
-- cancels its running child runs, and they theirs. Both rules live in one
-- trigger on the runs' status, so that they hold on every path that ends
-- a run (results, failures, recovery, cancellation).
ALTER TABLE trellis_runs
    ADD COLUMN parent_run_id uuid,
    ADD COLUMN parent_step   smallint,
    ADD COLUMN parent_index  integer;

-- Child runs of a task, in index order; also how a run that ends finds
-- its running children. Partial: runs without a parent are not in it.
CREATE INDEX trellis_runs_parent ON trellis_runs (parent_run_id, parent_step, parent_index)
    WHERE parent_run_id IS NOT NULL;

ALTER TABLE trellis_tasks ADD COLUMN awaiting integer;

CREATE FUNCTION trellis_kind_map() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 4::smallint $$;

CREATE FUNCTION trellis_kind_child() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 5::smallint $$;

COMMENT ON COLUMN trellis_tasks.kind IS
    'trellis_kind_code() = 0: runs user code; trellis_kind_sleep() = 1: a durable sleep; trellis_kind_on_failure() = 2: the run''s failure handler; 3: an event wait; trellis_kind_map() = 4: one child run per list element; trellis_kind_child() = 5: a child workflow';

-- trellis_woken tells a task that only needs completing when claimed or
-- handed back: a sleep whose timer fired, or a task whose child runs
-- ended (store.Kind.Wakes in Go). Like the kind functions it is a bare
-- expression, inlined.
CREATE FUNCTION trellis_woken(p_kind smallint, p_wake_at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT p_kind IN (1, 4, 5) AND p_wake_at IS NOT NULL $$;

-- 3 is left to event waits. Every existing row satisfies the wider
-- checks; validating them reads the table once.
ALTER TABLE trellis_tasks DROP CONSTRAINT trellis_tasks_kind_check;
ALTER TABLE trellis_tasks ADD CONSTRAINT trellis_tasks_kind_check CHECK (kind IN (0, 1, 2, 3, 4, 5)) NOT VALID;
ALTER TABLE trellis_tasks VALIDATE CONSTRAINT trellis_tasks_kind_check;

ALTER TABLE trellis_tasks DROP CONSTRAINT trellis_tasks_status_check;
ALTER TABLE trellis_tasks ADD CONSTRAINT trellis_tasks_status_check CHECK (status IN
    ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'RETRYING', 'WAITING',
     'COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')) NOT VALID;
ALTER TABLE trellis_tasks VALIDATE CONSTRAINT trellis_tasks_status_check;

-- trellis_wake queues a WAITING task again, woken (it only needs
-- completing), at p_at or its last change if later, with a WOKEN event
-- whose detail says why. It does nothing to a task that is not waiting.
CREATE FUNCTION trellis_wake(p_run uuid, p_step smallint, p_at timestamptz, p_detail text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    w record;
BEGIN
    UPDATE trellis_tasks t
    SET status = 'QUEUED', awaiting = NULL,
        wake_at = greatest(p_at, t.updated_at), updated_at = greatest(p_at, t.updated_at)
    WHERE t.run_id = p_run AND t.step = p_step AND t.status = 'WAITING'
    RETURNING t.attempt, t.updated_at AS at INTO w;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    VALUES (p_run, p_step, 'WOKEN', w.attempt, w.at, nullif(p_detail, ''));
    PERFORM trellis_enqueue(ARRAY[p_run], ARRAY[p_step], ARRAY[true], ARRAY[r.tenant], ARRAY[r.workflow],
                            ARRAY[trellis_lane(r.priority, true)])
    FROM trellis_runs r WHERE r.id = p_run;
    RETURN true;
END
$$;

-- trellis_cancel_children cancels the running child runs of a run and
-- every unfinished task of theirs, as CancelRuns does: runs locked in id
-- order, then queue entries and timers, then tasks, then leases (the lock
-- order of 0001). Cancelling them fires trellis_run_ended for each, which
-- goes on to their children.
CREATE FUNCTION trellis_cancel_children(p_parent uuid, p_now timestamptz, p_detail text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    ids uuid[];
BEGIN
    SELECT array_agg(c.id) INTO ids FROM (
        SELECT r.id FROM trellis_runs r
        WHERE r.parent_run_id = p_parent AND r.status = 'RUNNING'
        ORDER BY r.id FOR NO KEY UPDATE
    ) AS c;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM trellis_ready q WHERE q.run_id = ANY (ids);
    DELETE FROM trellis_timers m WHERE m.run_id = ANY (ids);
    WITH cancelled AS (
        UPDATE trellis_tasks t
        SET status = 'CANCELLED', updated_at = greatest(p_now, t.updated_at), finished_at = greatest(p_now, t.updated_at)
        WHERE t.run_id = ANY (ids) AND t.status IN ('PENDING', 'QUEUED', 'RUNNING', 'SLEEPING', 'RETRYING', 'WAITING')
        RETURNING t.run_id, t.step, t.attempt, t.updated_at AS at
    ), released AS (
        DELETE FROM trellis_leases l USING cancelled c WHERE l.run_id = c.run_id AND l.step = c.step
    )
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    SELECT run_id, step, 'CANCELLED', attempt, at, p_detail FROM cancelled;
    UPDATE trellis_runs SET status = 'CANCELLED', finished_at = p_now WHERE id = ANY (ids) AND status = 'RUNNING';
    PERFORM pg_notify(trellis_channel(), 'finished ' || id::text) FROM unnest(ids) AS id;
END
$$;

-- trellis_run_ended applies the two rules above to a run that just ended.
-- A child run counts down only a task that still waits in a running run:
-- a parent run that ended has cancelled its waiting tasks, or is about to.
CREATE FUNCTION trellis_run_ended() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t record;
    at timestamptz := coalesce(NEW.finished_at, now());
BEGIN
    IF NEW.status <> 'COMPLETED' THEN
        PERFORM trellis_cancel_children(NEW.id, at, 'parent run ' || NEW.status);
    END IF;
    IF NEW.parent_run_id IS NULL THEN
        RETURN NULL;
    END IF;
    UPDATE trellis_tasks k
    SET awaiting = k.awaiting - 1
    FROM trellis_runs p
    WHERE p.id = NEW.parent_run_id AND p.status = 'RUNNING'
      AND k.run_id = NEW.parent_run_id AND k.step = NEW.parent_step AND k.status = 'WAITING'
    RETURNING k.awaiting INTO t;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF NEW.status <> 'COMPLETED' THEN
        PERFORM trellis_wake(NEW.parent_run_id, NEW.parent_step, at,
                             format('child run %s (index %s) ended %s', NEW.id, NEW.parent_index, NEW.status));
    ELSIF t.awaiting <= 0 THEN
        PERFORM trellis_wake(NEW.parent_run_id, NEW.parent_step, at, 'every child run completed');
    END IF;
    RETURN NULL;
END
$$;

-- Fires only for runs that end with a parent, or end otherwise than
-- completed: a run without children that completes costs one test here.
CREATE TRIGGER trellis_run_ended AFTER UPDATE OF status ON trellis_runs
    FOR EACH ROW
    WHEN (OLD.status = 'RUNNING' AND NEW.status <> 'RUNNING'
          AND (NEW.parent_run_id IS NOT NULL OR NEW.status <> 'COMPLETED'))
    EXECUTE FUNCTION trellis_run_ended();
