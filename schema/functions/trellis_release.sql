-- trellis_release gives back the concurrency-limit slot of a task that
-- ended, or takes it out of its key's line, and queues the tasks waiting
-- longest for the freed slot (see trellis_admit, which takes slots).
--
-- A trigger, not a call from the queries: a task ends on many paths
-- (results, failures, skips, cancellation of its run or of its parent
-- run, in SQL and in trellis_cancel_children), and a slot must come back
-- on every one of them. Only tasks with a limit that end fire it: the
-- condition is checked as each row is updated, before any call, so other
-- updates pay nothing but the check.

CREATE OR REPLACE FUNCTION trellis_release() RETURNS trigger
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

CREATE OR REPLACE TRIGGER trellis_release AFTER UPDATE OF status ON trellis_tasks
FOR EACH ROW
WHEN (NEW.limit_key IS NOT NULL
      AND NEW.status IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')
      AND OLD.status NOT IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED'))
EXECUTE FUNCTION trellis_release();
