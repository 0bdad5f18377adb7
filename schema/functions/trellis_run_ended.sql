-- trellis_run_ended applies the two rules of child runs (runs a task
-- starts and waits for: map elements, child workflows) to a run that just
-- ended:
--
--   - A run that ends otherwise than completed cancels its running child
--     runs (trellis_cancel_children), and they theirs, and forgets its
--     event waits (trellis_event_waits; a completed run waits for
--     nothing).
--   - A child run that ends counts down its parent task's awaiting, and
--     wakes the task (trellis_wake) when the last one completes or as soon
--     as one ends otherwise. It counts down only a task that still waits
--     in a running run: a parent run that ended has cancelled its waiting
--     tasks, or is about to.
--
-- A trigger on the runs' status, so that both rules hold on every path
-- that ends a run (results, failures, recovery, cancellation, and
-- trellis_cancel_children itself, which is how a cancellation reaches
-- grandchildren). It fires only for runs that end with a parent, or end
-- otherwise than completed: a run without children that completes costs
-- one test.

CREATE OR REPLACE FUNCTION trellis_run_ended() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t record;
    at timestamptz := coalesce(NEW.finished_at, now());
BEGIN
    IF NEW.status <> 'COMPLETED' THEN
        PERFORM trellis_cancel_children(NEW.id, at, 'parent run ' || NEW.status);
        DELETE FROM trellis_event_waits x WHERE x.run_id = NEW.id;
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

CREATE OR REPLACE TRIGGER trellis_run_ended AFTER UPDATE OF status ON trellis_runs
    FOR EACH ROW
    WHEN (OLD.status = 'RUNNING' AND NEW.status <> 'RUNNING'
          AND (NEW.parent_run_id IS NOT NULL OR NEW.status <> 'COMPLETED'))
    EXECUTE FUNCTION trellis_run_ended();
