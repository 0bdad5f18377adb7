-- trellis_woken tells a task that only needs completing when claimed or
-- handed back (store.Kind.Wakes in Go): a sleep whose timer fired, a wait
-- that was woken, a map or child workflow step whose child runs ended.
-- Like the kind functions it is a bare expression, inlined, so its kinds
-- are literals: 1 sleep, 3 wait, 4 map, 5 child (see trellis_kind.sql).

CREATE OR REPLACE FUNCTION trellis_woken(p_kind smallint, p_wake_at timestamptz) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT p_kind IN (1, 3, 4, 5) AND p_wake_at IS NOT NULL $$;
