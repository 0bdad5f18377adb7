-- Event waits (task kind 3) and deadlines on waiting tasks.
--
-- A wait task waits WAITING for the first event of its name sent to its
-- run, or, when it has a key, sent with that key to its workflow and
-- tenant since its run was created. Sent events are kept in
-- trellis_sent_events (an event sent before the wait began is delivered
-- when it begins); the waits under way are in trellis_event_waits, so
-- that sending an event finds them by its address without reading the
-- tasks. Delivering one stores the payload as the task's output and
-- queues the task woken, to be completed.
--
-- A waiting task may have a deadline: a wait's timeout, a child workflow
-- step's. Its timer (trellis_timers) wakes it then with no output unless
-- something woke it first.

CREATE TABLE trellis_sent_events (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workflow text NOT NULL,
    name     text NOT NULL,
    -- An event sent to a run has run_id; one sent with a key has tenant
    -- and key.
    run_id   uuid,
    tenant   text,
    key      text,
    payload  json NOT NULL,
    sent_at  timestamptz NOT NULL,
    CHECK ((run_id IS NULL) <> (key IS NULL))
);

-- A wait's first event: by run, or by address since its run's creation.
CREATE INDEX trellis_sent_events_run ON trellis_sent_events (run_id, name, id) WHERE run_id IS NOT NULL;
CREATE INDEX trellis_sent_events_key ON trellis_sent_events (workflow, tenant, name, key, id) WHERE key IS NOT NULL;
-- Retention of keyed events by age.
CREATE INDEX trellis_sent_events_keyed_at ON trellis_sent_events (sent_at) WHERE key IS NOT NULL;

-- The waits under way: a row while its task is WAITING for an event. Rows
-- of tasks that stopped waiting otherwise (their run ended) are deleted
-- where the run ends; a stray one is harmless, since delivery wakes only
-- a task that is still WAITING.
CREATE TABLE trellis_event_waits (
    run_id   uuid NOT NULL,
    step     smallint NOT NULL,
    workflow text NOT NULL,
    tenant   text NOT NULL,
    name     text NOT NULL,
    -- NULL for a wait that only events sent to its run reach.
    key      text,
    PRIMARY KEY (run_id, step)
);

CREATE INDEX trellis_event_waits_key ON trellis_event_waits (workflow, tenant, name, key) WHERE key IS NOT NULL;

ALTER TABLE trellis_event_waits SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_cost_delay = 0);

CREATE FUNCTION trellis_kind_wait() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 3::smallint $$;

COMMENT ON COLUMN trellis_tasks.kind IS
    'trellis_kind_code() = 0: runs user code; trellis_kind_sleep() = 1: a durable sleep; trellis_kind_on_failure() = 2: the run''s failure handler; trellis_kind_wait() = 3: waits for an event; trellis_kind_map() = 4: one child run per list element; trellis_kind_child() = 5: a child workflow';

-- A woken wait, like a woken sleep, map or child step, only needs
-- completing (store.Kind.Wakes).
CREATE OR REPLACE FUNCTION trellis_woken(p_kind smallint, p_wake_at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT p_kind IN (1, 3, 4, 5) AND p_wake_at IS NOT NULL $$;

-- trellis_wake (0012), which also drops the task's deadline and wait:
-- whatever woke it came first.
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

-- trellis_run_ended (0012), which also forgets the waits of a run that
-- ended otherwise than completed (a completed run waits for nothing).
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

-- trellis_event_lock serializes, for one address (workflow, tenant,
-- event, key), the sends that deliver to it and the waits that begin on
-- it, so that an event sent while a wait begins is found by one or the
-- other. Events sent to a run are serialized by the run's row lock.
CREATE FUNCTION trellis_event_lock(p_workflow text, p_tenant text, p_name text, p_key text) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock(hashtextextended(
        current_schema() || '.trellis.event.' || p_workflow || chr(31) || p_tenant || chr(31) || p_name || chr(31) || p_key, 0))
$$;
