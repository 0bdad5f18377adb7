-- trellis_wake queues a WAITING task again, woken (it only needs
-- completing, see trellis_woken), at p_at or its last change if later,
-- with a WOKEN event whose detail says why, and drops its deadline timer
-- and its event wait: whatever woke it came first. It does nothing to a
-- task that is not waiting, and returns whether it woke one.
--
-- Called when an event is delivered (queries/waits.sql), when a waiting
-- task's deadline passes (queries/tasks.sql, TaskWake), and by
-- trellis_run_ended when a child run ends.

CREATE OR REPLACE FUNCTION trellis_wake(p_run uuid, p_step smallint, p_at timestamptz, p_detail text) RETURNS boolean
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
    DELETE FROM trellis_timers m WHERE m.run_id = p_run AND m.step = p_step;
    DELETE FROM trellis_event_waits x WHERE x.run_id = p_run AND x.step = p_step;
    INSERT INTO trellis_events (run_id, step, type, attempt, at, detail)
    VALUES (p_run, p_step, 'WOKEN', w.attempt, w.at, nullif(p_detail, ''));
    PERFORM trellis_enqueue(ARRAY[p_run], ARRAY[p_step], ARRAY[true], ARRAY[r.tenant], ARRAY[r.workflow],
                            ARRAY[trellis_lane(r.priority, true)])
    FROM trellis_runs r WHERE r.id = p_run;
    RETURN true;
END
$$;
