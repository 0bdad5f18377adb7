-- Rate limits by key (store.Rate says the rule; the memory store
-- implements the same): each start of a task sharing a key takes a turn,
-- turns at least an interval apart, up to burst at once after a quiet
-- spell, by the generic cell rate algorithm. A claim decides, in
-- trellis_pace, a trigger on the task's change to RUNNING: a task whose
-- turn is later is not claimed but put off, QUEUED, off the ready queue,
-- with a timer for its turn. So the claim queries are unchanged: tasks
-- without a rate limit pay only the trigger's WHEN check.

-- A task's rate limit, set when its run is created; NULL for none. The
-- interval is in microseconds. rate_turn is set when a task put off is
-- queued again for its turn (TimersFire): its next claim starts it.
ALTER TABLE trellis_tasks ADD COLUMN rate_key text, ADD COLUMN rate_interval bigint, ADD COLUMN rate_burst integer,
    ADD COLUMN rate_turn boolean NOT NULL DEFAULT false;

-- The pace of each key: tat (the algorithm's theoretical arrival time)
-- is when the key's next turn is due; a turn may come (burst-1)
-- intervals before it. A key at rest (tat past) behaves as a key
-- without a row: the leader's Maintain deletes such rows.
CREATE TABLE trellis_rates (
    key text PRIMARY KEY,
    tat timestamptz NOT NULL
);

ALTER TABLE trellis_rates SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- The tasks put off, until their turn comes (TimersFire) or they end, for
-- queue depth.
CREATE TABLE trellis_paced (
    run_id uuid NOT NULL,
    step   smallint NOT NULL,
    tenant text NOT NULL,
    PRIMARY KEY (run_id, step)
);

ALTER TABLE trellis_paced SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

-- trellis_pace gives a claimed task with a rate limit its turn: a task
-- queued for its turn starts; any other takes the key's next turn, by one
-- statement that also locks the key's row. When the turn is now, the
-- task starts; when it is later, the task is put off: it stays QUEUED
-- (returning NULL skips the claim's update of its row, so the claim does
-- not return it) with a timer for its turn. now is the claim's time as
-- the claim stamps the task.
CREATE FUNCTION trellis_pace() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    now timestamptz := NEW.updated_at;
    every interval := NEW.rate_interval * interval '1 microsecond';
    tolerance interval := (NEW.rate_burst - 1) * NEW.rate_interval * interval '1 microsecond';
    due timestamptz;
    turn timestamptz;
BEGIN
    IF NEW.rate_turn THEN
        NEW.rate_turn := false;
        RETURN NEW;
    END IF;
    -- The key's due time moves on by one interval from the later of its
    -- old value and now; the turn taken is the old value less the
    -- tolerance, or now.
    INSERT INTO trellis_rates AS r (key, tat) VALUES (NEW.rate_key, now + every)
    ON CONFLICT (key) DO UPDATE SET tat = greatest(r.tat, now) + every
    RETURNING r.tat INTO due;
    turn := greatest(now, due - every - tolerance);
    IF turn <= now THEN
        RETURN NEW;
    END IF;
    INSERT INTO trellis_paced (run_id, step, tenant)
    SELECT NEW.run_id, NEW.step, tenant FROM trellis_runs WHERE id = NEW.run_id
    ON CONFLICT DO NOTHING;
    INSERT INTO trellis_timers (run_id, step, wake_at) VALUES (NEW.run_id, NEW.step, turn)
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

-- trellis_unpace forgets a task that ended while put off (its run was
-- cancelled).
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
