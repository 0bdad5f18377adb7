-- Rate limits by key (store.Rate says the rule; the memory store
-- implements the same): each start of a task sharing a key takes a turn,
-- turns at least an interval apart, up to burst at once after a quiet
-- spell, by the generic cell rate algorithm. A claim decides, calling
-- trellis_pace for the tasks it takes that have a rate limit: a task
-- whose turn is later is not claimed but put off, QUEUED, off the ready
-- queue, with a timer for its turn. Tasks without a rate limit pay one
-- test of rate_key. (Not a BEFORE UPDATE trigger: its mere presence on
-- trellis_tasks cost 12% more WAL a task and 4% of the burn-down rate,
-- measured, though its WHEN was false for every row.)

-- A task's rate limit, set when its run is created; NULL for none. The
-- interval is in microseconds. rate_turn is true when a task put off is
-- queued again for its turn (TimersFire): its next claim starts it. All
-- four are NULL for tasks without a rate limit, which so cost no more
-- bytes than the null bitmap's bits.
ALTER TABLE trellis_tasks ADD COLUMN rate_key text, ADD COLUMN rate_interval bigint, ADD COLUMN rate_burst integer,
    ADD COLUMN rate_turn boolean;

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

-- trellis_pace gives a task a claim is taking, which has a rate limit,
-- its turn, and says whether it may start now: a task queued for its
-- turn (turn) may; any other takes the key's next turn, by one statement
-- that also locks the key's row, and may start when that turn is now.
-- When it is later, the task is put off: the claim leaves it QUEUED (it
-- is off the ready queue already) and this sets a timer for its turn.
-- now is the claim's time as the claim stamps the task. The claim
-- queries call it in the condition of their update of the tasks, for the
-- tasks they took only, and only for those with a rate limit.
CREATE FUNCTION trellis_pace(p_run uuid, p_step smallint, p_key text, p_interval bigint, p_burst integer,
                             p_turn boolean, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    every interval := p_interval * interval '1 microsecond';
    tolerance interval := (p_burst - 1) * p_interval * interval '1 microsecond';
    due timestamptz;
    turn timestamptz;
BEGIN
    IF p_turn THEN
        RETURN true;
    END IF;
    -- The key's due time moves on by one interval from the later of its
    -- old value and now; the turn taken is the old value less the
    -- tolerance, or now.
    INSERT INTO trellis_rates AS r (key, tat) VALUES (p_key, p_now + every)
    ON CONFLICT (key) DO UPDATE SET tat = greatest(r.tat, p_now) + every
    RETURNING r.tat INTO due;
    turn := greatest(p_now, due - every - tolerance);
    IF turn <= p_now THEN
        RETURN true;
    END IF;
    INSERT INTO trellis_paced (run_id, step, tenant)
    SELECT p_run, p_step, tenant FROM trellis_runs WHERE id = p_run
    ON CONFLICT DO NOTHING;
    INSERT INTO trellis_timers (run_id, step, wake_at) VALUES (p_run, p_step, turn)
    ON CONFLICT (run_id, step) DO UPDATE SET wake_at = excluded.wake_at;
    -- The leader may be asleep until a later timer: wake it (one
    -- notification per transaction, however many tasks it puts off).
    PERFORM pg_notify(trellis_channel(), 'timer');
    RETURN false;
END
$$;

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
