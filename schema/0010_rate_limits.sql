-- Rate limits by key (store.Rate says the rule; the memory store
-- implements the same): tasks sharing a key start at most once per
-- interval, up to burst at once after a quiet spell, by the generic cell
-- rate algorithm. A claim decides, in trellis_pace, a trigger on the
-- task's change to RUNNING: a task ahead of its key's pace is not claimed
-- but put off, QUEUED, off the ready queue, with a timer for its turn. So
-- the claim queries are unchanged: tasks without a rate limit pay only
-- the trigger's WHEN check.

-- A task's rate limit, set when its run is created; NULL for none. The
-- interval is in microseconds.
ALTER TABLE trellis_tasks ADD COLUMN rate_key text, ADD COLUMN rate_interval bigint, ADD COLUMN rate_burst integer;

-- The pace of each key. tat (the algorithm's theoretical arrival time)
-- is when the key's next start is due; a start may come (burst-1)
-- intervals before it. line is the turn after the last task put off:
-- while it is ahead, tasks new to the key join the line. A key at rest
-- (both past) behaves as a key without a row: the leader's Maintain
-- deletes such rows.
CREATE TABLE trellis_rates (
    key  text PRIMARY KEY,
    tat  timestamptz NOT NULL,
    line timestamptz NOT NULL
);

ALTER TABLE trellis_rates SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- The tasks put off, until they start or end: when one is claimed again
-- its turn has come, and it does not join the line again.
CREATE TABLE trellis_paced (
    run_id uuid NOT NULL,
    step   smallint NOT NULL,
    tenant text NOT NULL,
    PRIMARY KEY (run_id, step)
);

ALTER TABLE trellis_paced SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- trellis_pace lets a claimed task with a rate limit start when its turn
-- has come (it was put off before, or its key has nobody in line) and
-- the key's pace allows, and puts it off otherwise: it then keeps the
-- task QUEUED (returning NULL skips the claim's update of its row, so the
-- claim does not return it), adds it to the line, and sets a timer for
-- its turn. now is the claim's time as the claim stamps the task.
CREATE FUNCTION trellis_pace() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    now timestamptz := NEW.updated_at;
    every interval := NEW.rate_interval * interval '1 microsecond';
    tolerance interval := (NEW.rate_burst - 1) * NEW.rate_interval * interval '1 microsecond';
    r trellis_rates%ROWTYPE;
    turn boolean;
    slot timestamptz;
BEGIN
    SELECT * INTO r FROM trellis_rates WHERE key = NEW.rate_key FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO trellis_rates (key, tat, line) VALUES (NEW.rate_key, '-infinity', '-infinity')
        ON CONFLICT (key) DO NOTHING;
        SELECT * INTO r FROM trellis_rates WHERE key = NEW.rate_key FOR UPDATE;
    END IF;
    DELETE FROM trellis_paced WHERE run_id = NEW.run_id AND step = NEW.step;
    turn := FOUND OR r.line <= now;
    IF turn AND r.tat - tolerance <= now THEN
        UPDATE trellis_rates SET tat = greatest(r.tat, now) + every WHERE key = NEW.rate_key;
        RETURN NEW;
    END IF;
    slot := greatest(r.line, now, r.tat - tolerance);
    UPDATE trellis_rates SET line = slot + every WHERE key = NEW.rate_key;
    INSERT INTO trellis_paced (run_id, step, tenant)
    SELECT NEW.run_id, NEW.step, tenant FROM trellis_runs WHERE id = NEW.run_id;
    INSERT INTO trellis_timers (run_id, step, wake_at) VALUES (NEW.run_id, NEW.step, slot)
    ON CONFLICT (run_id, step) DO UPDATE SET wake_at = excluded.wake_at;
    -- The leader may be asleep until a later timer: wake it (one
    -- notification per transaction, however many tasks it puts off).
    PERFORM pg_notify(trellis_channel(), 'timer');
    RETURN NULL;
END
$$;

-- Only tasks with a rate limit that are claimed fire it: the condition is
-- checked as each row is updated, before any call.
CREATE TRIGGER trellis_pace BEFORE UPDATE OF status ON trellis_tasks
FOR EACH ROW
WHEN (NEW.rate_key IS NOT NULL AND NEW.status = 'RUNNING' AND OLD.status = 'QUEUED')
EXECUTE FUNCTION trellis_pace();

-- trellis_unpace takes a task that ended while put off (its run was
-- cancelled) out of the line.
CREATE FUNCTION trellis_unpace() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM trellis_paced WHERE run_id = NEW.run_id AND step = NEW.step;
    RETURN NULL;
END
$$;

CREATE TRIGGER trellis_unpace AFTER UPDATE OF status ON trellis_tasks
FOR EACH ROW
WHEN (NEW.rate_key IS NOT NULL
      AND NEW.status IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')
      AND OLD.status = 'QUEUED')
EXECUTE FUNCTION trellis_unpace();
