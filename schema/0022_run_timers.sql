-- Run timers: a delayed start (a trigger's WithStartAt or WithStartAfter)
-- queues a run's roots when it is due, and a deadline (a workflow's
-- timeout, or a trigger's WithTimeout) fails a run still running when
-- it passes (store.Timers FireRunTimers).
--
-- trellis_runs.start_at is when a delayed run starts, and deadline when
-- a run fails if still running; NULL for a run without one (a delayed
-- run's deadline is set when it starts). Nothing indexes them, so
-- writing them keeps the row's updates HOT.
--
-- trellis_run_timers holds a run's one pending timer: its start (start
-- true; the deadline, if any, is set when it fires) or its deadline. The
-- leader fires a timer (and deletes its row) once due, whether or not
-- the run ended first: a run that ends removes nothing, so runs without
-- a timer, and runs that end, pay nothing for them. timeout is the
-- run's timeout in microseconds (0 for none): the deadline a start
-- sets, and the failure's message.
ALTER TABLE trellis_runs ADD COLUMN start_at timestamptz, ADD COLUMN deadline timestamptz;

CREATE TABLE trellis_run_timers (
    run_id  uuid PRIMARY KEY,
    wake_at timestamptz NOT NULL,
    start   boolean NOT NULL,
    timeout bigint NOT NULL
);

CREATE INDEX trellis_run_timers_due ON trellis_run_timers (wake_at);
