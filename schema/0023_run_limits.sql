-- Concurrency limits on whole runs by key (store.RunLimit says the rule;
-- the memory store implements the same): at most max runs sharing a key
-- are in progress at once, across every worker. A run takes a slot of
-- its key when it is created (trellis_run_limit_admit), keeps it until it
-- ends, and gives it back then (trellis_run_limit_release, a trigger). A
-- run that finds no free slot (strategy queue) waits in its key's line,
-- its roots QUEUED but off the ready queue, and is let in as slots come
-- back, oldest first. Slots are counted in trellis_limits, as those of
-- task limits: run keys carry a scope no task key has (workflow@runs).
-- Runs without a limit leave the new columns NULL and pay nothing.

-- A run's limit, set when it is created; NULL for none.
ALTER TABLE trellis_runs ADD COLUMN limit_key text, ADD COLUMN limit_max integer;

-- The runs holding a key's slots, oldest first: what cancelInProgress
-- cancels. Only running runs with a limit are in it.
CREATE INDEX trellis_runs_limit_holders ON trellis_runs (limit_key, id)
    WHERE limit_key IS NOT NULL AND status = 'RUNNING';

-- Runs waiting for a slot, in line per key (seq order).
CREATE TABLE trellis_run_waiting (
    run_id uuid PRIMARY KEY,
    key    text NOT NULL,
    seq    bigint GENERATED ALWAYS AS IDENTITY,
    max    integer NOT NULL
);

CREATE INDEX trellis_run_waiting_line ON trellis_run_waiting (key, seq);
