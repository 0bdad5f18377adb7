-- Concurrency limits on whole runs (schema/0023; store.RunLimit says the
-- rule, the memory store implements the same): a run takes a slot of its
-- key when it is created, keeps it until it ends, and gives it back then.
-- Slots are counted in trellis_limits, beside those of task limits, and
-- every change to a key's slots or line locks its row first.

-- trellis_run_limit_let_in queues the roots of a run let in: its tasks
-- that are QUEUED (and so on no queue yet), each under its own task
-- limit (trellis_admit).
CREATE OR REPLACE FUNCTION trellis_run_limit_let_in(p_run uuid)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    queued bigint;
BEGIN
    SELECT trellis_admit(array_agg(t.run_id ORDER BY t.step), array_agg(t.step ORDER BY t.step), array_agg(r.tenant ORDER BY t.step),
                         array_agg(r.workflow ORDER BY t.step), array_agg(trellis_lane(r.priority, false) ORDER BY t.step),
                         array_agg(t.limit_key ORDER BY t.step), array_agg(t.limit_max ORDER BY t.step))
    INTO queued
    FROM trellis_tasks t
    JOIN trellis_runs r ON r.id = t.run_id
    WHERE t.run_id = p_run AND t.status = 'QUEUED'
      AND NOT EXISTS (SELECT 1 FROM trellis_ready q WHERE q.run_id = t.run_id AND q.step = t.step);
    RETURN coalesce(queued, 0);
END
$$;

-- trellis_run_limit_admit gives a new run, whose tasks are written with
-- its roots QUEUED but on no queue, a slot of its key, or applies its
-- strategy when there is none. It returns what it decided:
--
--   - 'started': the run took a slot and its roots are queued;
--   - 'waiting': the run waits in its key's line (strategy queue);
--   - 'cancel': the run must be cancelled (cancelNewest); others holds
--     the newest run holding a slot, which the caller names;
--   - 'make-room': the runs in others hold the slots (cancelInProgress),
--     oldest first; the caller cancels them and calls again.
CREATE OR REPLACE FUNCTION trellis_run_limit_admit(p_run uuid, p_key text, p_max integer, p_strategy text,
                                                   OUT decision text, OUT others uuid[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    h integer;
BEGIN
    UPDATE trellis_runs SET limit_key = p_key, limit_max = p_max WHERE id = p_run;
    INSERT INTO trellis_limits AS l (key, held) VALUES (p_key, 0)
    ON CONFLICT (key) DO UPDATE SET held = l.held
    RETURNING l.held INTO h;
    IF h < p_max AND NOT EXISTS (SELECT 1 FROM trellis_run_waiting w WHERE w.key = p_key) THEN
        UPDATE trellis_limits SET held = h + 1 WHERE key = p_key;
        PERFORM trellis_run_limit_let_in(p_run);
        decision := 'started';
        RETURN;
    END IF;
    IF p_strategy = 'cancelInProgress' THEN
        decision := 'make-room';
        others := ARRAY(
            SELECT r.id FROM trellis_runs r
            WHERE r.limit_key = p_key AND r.status = 'RUNNING' AND r.id <> p_run
              AND NOT EXISTS (SELECT 1 FROM trellis_run_waiting w WHERE w.run_id = r.id)
            ORDER BY r.id
            LIMIT greatest(h - p_max + 1, 1));
        RETURN;
    END IF;
    -- In line: a run cancelled from here leaves it without giving back a
    -- slot it never held.
    INSERT INTO trellis_run_waiting (run_id, key, max) VALUES (p_run, p_key, p_max);
    IF p_strategy = 'cancelNewest' THEN
        decision := 'cancel';
        others := ARRAY(
            SELECT r.id FROM trellis_runs r
            WHERE r.limit_key = p_key AND r.status = 'RUNNING' AND r.id <> p_run
              AND NOT EXISTS (SELECT 1 FROM trellis_run_waiting w WHERE w.run_id = r.id)
            ORDER BY r.id DESC
            LIMIT 1);
        RETURN;
    END IF;
    decision := 'waiting';
END
$$;

-- trellis_run_limit_debounce makes a new debounced run, whose tasks are
-- written with its roots QUEUED but on no queue, the one its key waits
-- for, due p_window after p_now (or p_max_wait after its burst's first
-- run, when sooner), and returns the runs of its key that waited before
-- it, for the caller to cancel. Durations are in microseconds. The key's row of trellis_limits, locked
-- first, orders the triggers of a key and the firing of its run
-- (trellis_run_limit_fire).
CREATE OR REPLACE FUNCTION trellis_run_limit_debounce(p_run uuid, p_key text, p_window_us bigint, p_max_wait_us bigint,
                                                      p_now timestamptz)
RETURNS uuid[]
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    first timestamptz;
    due timestamptz;
    superseded uuid[];
BEGIN
    UPDATE trellis_runs SET limit_key = p_key, limit_max = 0 WHERE id = p_run;
    INSERT INTO trellis_limits AS l (key, held) VALUES (p_key, 0)
    ON CONFLICT (key) DO UPDATE SET held = l.held;
    SELECT min(w.since), array_agg(w.run_id ORDER BY w.seq) INTO first, superseded
    FROM trellis_run_waiting w WHERE w.key = p_key;
    first := coalesce(first, p_now);
    due := p_now + p_window_us * interval '1 microsecond';
    IF p_max_wait_us > 0 AND first + p_max_wait_us * interval '1 microsecond' < due THEN
        due := first + p_max_wait_us * interval '1 microsecond';
    END IF;
    INSERT INTO trellis_run_waiting (run_id, key, max, due_at, since) VALUES (p_run, p_key, 0, due, first);
    PERFORM pg_notify(trellis_channel(), 'timer');
    RETURN coalesce(superseded, '{}');
END
$$;

-- trellis_run_limit_fire lets in up to p_lim debounced runs due at
-- p_now, earliest first, and returns how many. Each waits for its key's
-- row, so that a trigger cancelling it (trellis_run_limit_debounce, then
-- the caller) goes first or after as a whole; a run no longer waiting
-- is left.
CREATE OR REPLACE FUNCTION trellis_run_limit_fire(p_now timestamptz, p_lim integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    w record;
    n integer := 0;
BEGIN
    FOR w IN
        SELECT run_id, key FROM trellis_run_waiting WHERE due_at <= p_now ORDER BY due_at LIMIT p_lim
    LOOP
        PERFORM 1 FROM trellis_limits WHERE key = w.key FOR UPDATE;
        DELETE FROM trellis_run_waiting WHERE run_id = w.run_id AND due_at <= p_now;
        CONTINUE WHEN NOT FOUND;
        -- No longer a run of its key: its end gives nothing back.
        UPDATE trellis_runs SET limit_key = NULL, limit_max = NULL WHERE id = w.run_id AND status = 'RUNNING';
        CONTINUE WHEN NOT FOUND;
        PERFORM trellis_run_limit_let_in(w.run_id);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
