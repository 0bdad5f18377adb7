-- A compact event log (issue 29, decision 3). A task's ordinary life wrote
-- three rows to trellis_events (QUEUED, STARTED, COMPLETED), each an
-- insert into the heap and into its primary key, and that was most of the
-- WAL and much of the database CPU a task cost. The task row now carries
-- them: one slot per type, each the event's id, time and attempt, filled
-- by the statement that writes the event when the slot is empty. Events
-- of a task that finds its slot taken (a retry's, a rerun's, a recovered
-- task's later QUEUED, STARTED and COMPLETED) and every other event
-- (SKIPPED, FAILED, RETRYING, SLEEPING, WAITING, WOKEN, CANCELLED, QUEUED
-- with a detail, ...) stay rows of trellis_events.
--
-- A slot's id is drawn from trellis_events' identity sequence, like a
-- row's, so that a run's log, rows and slots together, reads back in the
-- order it was written (ORDER BY id); the writers give a row they write in
-- place of a slot the id drawn for it (OVERRIDING SYSTEM VALUE), so that
-- it keeps its place in that order too.
--
-- Nullable columns without defaults: adding them rewrites nothing, and
-- the tasks of existing runs keep their events as rows (their slots stay
-- NULL; a later event of theirs fills an empty slot, in order). No index
-- on them, so that changes of a task stay HOT updates.
--
-- The slots come in the reverse of the order a task fills them, each slot
-- whole: the WAL record of an update on the same page leaves out the
-- bytes the new row version shares with the old one at its end, so an
-- update that fills a slot logs the slots filled before it only if they
-- come earlier in the row. In the order of filling, a task's completion
-- logged its QUEUED and STARTED slots again, and its claim its QUEUED
-- slot: a HOT update of a task averaged 202 bytes of WAL in the
-- throughput bench, 179 in this order.
ALTER TABLE trellis_tasks
    ADD COLUMN log_completed bigint, ADD COLUMN log_completed_at timestamptz, ADD COLUMN log_completed_attempt integer,
    ADD COLUMN log_started bigint, ADD COLUMN log_started_at timestamptz, ADD COLUMN log_started_attempt integer,
    ADD COLUMN log_queued bigint, ADD COLUMN log_queued_at timestamptz, ADD COLUMN log_queued_attempt integer;

-- The event log, as every reader reads it: the rows, and the filled
-- slots as rows of the same columns (they have no detail and no wake
-- time). A condition on run_id reaches both halves, so a run's log is
-- read through the two primary keys, the tasks' once for all three slots.
CREATE VIEW trellis_event_log AS
SELECT e.run_id, e.id, e.step, e.type, e.attempt, e.at, e.detail, e.wake_at
FROM trellis_events e
UNION ALL
SELECT t.run_id, s.id, t.step, s.type, s.attempt, s.at, NULL::text AS detail, NULL::timestamptz AS wake_at
FROM trellis_tasks t
CROSS JOIN LATERAL (VALUES (t.log_queued, 'QUEUED'::text, t.log_queued_attempt, t.log_queued_at),
                           (t.log_started, 'STARTED'::text, t.log_started_attempt, t.log_started_at),
                           (t.log_completed, 'COMPLETED'::text, t.log_completed_attempt, t.log_completed_at))
    AS s (id, type, attempt, at)
WHERE s.id IS NOT NULL;
