-- Concurrency limits on whole runs by key (store.RunLimit says the rule;
-- the memory store implements the same): at most max runs sharing a key
-- are in progress at once, across every worker. A run takes a slot of
-- its key when it is created (trellis_run_limit_admit), keeps it until it
-- ends, and gives it back then (trellis_run_limit_release, a trigger). A
-- run that finds no free slot (strategy queue) waits in its key's line,
-- its roots QUEUED but off the ready queue, and is let in as slots come
-- back, oldest first. Slots are counted in trellis_limits, as those of
-- task limits: run keys carry a scope no task key has (workflow@runs).
-- Debounced runs wait in the same table for their window (due_at), and are
-- let in by the leader's FireTimers (trellis_run_limit_fire). Runs
-- without a limit or a debounce leave the new columns NULL and pay
-- nothing.

-- A run's limit, set when it is created; NULL for none.
ALTER TABLE trellis_runs ADD COLUMN limit_key text, ADD COLUMN limit_max integer;

-- The runs holding a key's slots, oldest first: what cancelInProgress
-- cancels. Only running runs with a limit are in it.
CREATE INDEX trellis_runs_limit_holders ON trellis_runs (limit_key, id)
    WHERE limit_key IS NOT NULL AND status = 'RUNNING';

-- Runs waiting for a slot, in line per key (seq order), and debounced
-- runs (store.Debounce) waiting for their window: at most one per key,
-- with due_at, when it starts, and since, the creation of its burst's
-- first run. A debounced run's key is scoped workflow@debounce.
CREATE TABLE trellis_run_waiting (
    run_id uuid PRIMARY KEY,
    key    text NOT NULL,
    seq    bigint GENERATED ALWAYS AS IDENTITY,
    max    integer NOT NULL,
    due_at timestamptz,
    since  timestamptz
);

CREATE INDEX trellis_run_waiting_line ON trellis_run_waiting (key, seq);

-- The debounced runs by when they are due: what FireTimers and NextTimer
-- read.
CREATE INDEX trellis_run_waiting_due ON trellis_run_waiting (due_at) WHERE due_at IS NOT NULL;
