-- trellis_pace gives a task a claim is taking, which has a rate limit,
-- its turn, and says whether it may start now: a task queued for its
-- turn (p_turn) may; any other takes the key's next turn, by one
-- statement that also locks the key's row (trellis_rates), and may start
-- when that turn is now. When it is later, the task is put off: the claim
-- leaves it QUEUED (it is off the ready queue already), and this records
-- it in trellis_paced and sets a timer (trellis_timers) for its turn. p_now
-- is the claim's time as the claim stamps the task. The claim queries
-- (queries/ready.sql) call it in the condition of their update of the
-- tasks, for the tasks they took only, and only for those with a rate
-- limit. (Not a BEFORE UPDATE trigger: its mere presence on trellis_tasks
-- cost 12% more WAL a task and 4% of the burn-down rate, measured, though
-- its WHEN was false for every row.)
--
-- Rate limits (store.Rate says the rule; the memory store implements the
-- same): each start of a task sharing a key takes a turn, turns at least
-- an interval apart (p_interval, microseconds), up to p_burst at once
-- after a quiet spell, by the generic cell rate algorithm: the key's tat
-- (theoretical arrival time) is when its next turn is due, and a turn may
-- come (burst-1) intervals before it.

CREATE OR REPLACE FUNCTION trellis_pace(p_run uuid, p_step smallint, p_key text, p_interval bigint, p_burst integer,
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
