-- The task kinds by name (trellis_tasks.kind, a smallint; the column's
-- comment and its check constraint trellis_tasks_kind_check list them).
-- Queries say trellis_kind_on_failure(), not 2. These functions are SQL,
-- IMMUTABLE and a bare constant, so the planner inlines them and folds
-- them into the constant: a plan shows kind <> '2'::smallint, and costs
-- what the literal did. Keep them so (no plpgsql, no lookups). Go maps
-- them to store.Kind in one place (runtime/store/pgstore/kinds.go).
--
-- A new kind needs a migration too: the check constraint and the
-- column's comment are the table's.

CREATE OR REPLACE FUNCTION trellis_kind_code() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 0::smallint $$;

CREATE OR REPLACE FUNCTION trellis_kind_sleep() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 1::smallint $$;

CREATE OR REPLACE FUNCTION trellis_kind_on_failure() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 2::smallint $$;
CREATE OR REPLACE FUNCTION trellis_kind_wait() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 3::smallint $$;
CREATE OR REPLACE FUNCTION trellis_kind_map() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 4::smallint $$;

CREATE OR REPLACE FUNCTION trellis_kind_child() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 5::smallint $$;
