-- trellis_channel is the NOTIFY channel of this schema, so that several
-- Trellis schemas in one database do not wake each other. Functions that
-- queue work (trellis_enqueue) or set timers (trellis_pace) notify it;
-- engines LISTEN on it (queries/coordination.sql, NotifyChannel).

CREATE OR REPLACE FUNCTION trellis_channel() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT current_schema() || '.trellis' $$;
