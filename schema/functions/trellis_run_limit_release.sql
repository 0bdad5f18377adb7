-- trellis_run_limit_release gives back the slot of a run that ended, or
-- takes it out of its key's line, and lets in the runs waiting longest
-- for the freed slots. A run a retry reopens takes a slot again, even
-- over the key's max (store.RunLimit). A trigger, so that the slot comes
-- back on every path that ends a run (results, failures, recovery,
-- cancellation, trellis_cancel_children); only runs with a limit fire
-- it.
CREATE OR REPLACE FUNCTION trellis_run_limit_release() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    h integer;
    w record;
BEGIN
    IF NEW.status = 'RUNNING' THEN
        INSERT INTO trellis_limits AS l (key, held) VALUES (NEW.limit_key, 1)
        ON CONFLICT (key) DO UPDATE SET held = l.held + 1;
        RETURN NULL;
    END IF;
    DELETE FROM trellis_run_waiting WHERE run_id = NEW.id;
    IF FOUND THEN
        RETURN NULL; -- it waited, and held no slot
    END IF;
    UPDATE trellis_limits SET held = greatest(held - 1, 0) WHERE key = NEW.limit_key RETURNING held INTO h;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    FOR w IN
        SELECT * FROM trellis_run_waiting WHERE key = NEW.limit_key ORDER BY seq LIMIT 100
    LOOP
        EXIT WHEN h >= w.max;
        DELETE FROM trellis_run_waiting WHERE run_id = w.run_id;
        h := h + 1;
        PERFORM trellis_run_limit_let_in(w.run_id);
    END LOOP;
    UPDATE trellis_limits SET held = h WHERE key = NEW.limit_key;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER trellis_run_limit_release AFTER UPDATE OF status ON trellis_runs
    FOR EACH ROW
    WHEN (NEW.limit_key IS NOT NULL AND (OLD.status = 'RUNNING') <> (NEW.status = 'RUNNING'))
    EXECUTE FUNCTION trellis_run_limit_release();
