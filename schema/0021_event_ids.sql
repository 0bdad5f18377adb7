-- Published events' ids (runtime.Engine.PublishEvent with a key): an
-- event sent with a key may carry the id of the event it delivers, and a
-- second one with the same id for the same workflow, tenant and event is
-- a repeat, stored nowhere and waking nothing, so that publishing an
-- event twice delivers it once. The store holds an id as long as it keeps
-- its event (keyed events are purged by age, store.Retention).
--
-- A nullable column without a default: adding it rewrites nothing. The
-- unique index is partial: events without an id (every event before this
-- migration, those sent to a run, those sent by key with Send) have no
-- entry, so it builds from an empty set, though CREATE INDEX still reads
-- trellis_sent_events once and blocks writes to it meanwhile.
ALTER TABLE trellis_sent_events ADD COLUMN event_id text;

CREATE UNIQUE INDEX trellis_sent_events_id ON trellis_sent_events (workflow, tenant, name, event_id)
    WHERE event_id IS NOT NULL;
