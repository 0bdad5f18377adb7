-- When a SLEEPING or RETRYING event's timer is due, as a column of its
-- own: readers of the event log no longer parse it out of the detail
-- (which only SLEEPING events carried). NULL for every other event, and
-- for events written before this migration. A nullable column without a
-- default is added without rewriting the table, so the event history of
-- a live system does not stop writes while it upgrades.
ALTER TABLE trellis_events ADD COLUMN wake_at timestamptz;
