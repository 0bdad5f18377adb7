-- trellis_lane is the lane of a task of a run of the given priority
-- (runtime/store/priority.go says the rule; the memory store implements
-- the same). Lanes run from 0 to 7 (store.Lanes), higher first: a run's
-- root tasks, queued when it is created, go in its new lane; every task
-- queued later in its in-progress lane, one above.

CREATE OR REPLACE FUNCTION trellis_lane(p_priority smallint, p_in_progress boolean) RETURNS smallint
LANGUAGE sql IMMUTABLE AS $$ SELECT (2 * p_priority + CASE WHEN p_in_progress THEN 1 ELSE 0 END)::smallint $$;
