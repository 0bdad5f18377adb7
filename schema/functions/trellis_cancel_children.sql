-- trellis_cancel_children cancels the running child runs of a run and
-- every unfinished task of theirs, as CancelRuns does: runs locked in id
-- order, then queue entries and timers, then tasks, then leases (the lock
-- order of schema/0001). Cancelling them fires trellis_run_ended for
-- each, which goes on to their children. Called by trellis_run_ended.

CREATE OR REPLACE FUNCTION trellis_cancel_children(p_parent uuid, p_now timestamptz, p_detail text) RETURNS void
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
