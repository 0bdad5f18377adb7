-- trellis_event_lock serializes, for one address (workflow, tenant,
-- event, key), the sends that deliver to it and the waits that begin on
-- it, so that an event sent while a wait begins is found by one or the
-- other (queries/waits.sql: EventLocks, AwaitLocks). Events sent to a run
-- are serialized by the run's row lock. The lock is a transaction-level
-- advisory lock, named within this schema.

CREATE OR REPLACE FUNCTION trellis_event_lock(p_workflow text, p_tenant text, p_name text, p_key text) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock(hashtextextended(
        current_schema() || '.trellis.event.' || p_workflow || chr(31) || p_tenant || chr(31) || p_name || chr(31) || p_key, 0))
$$;
