-- Task kinds by name. trellis_tasks.kind stays a smallint: an enum would
-- rewrite the whole task history under an exclusive lock, and would break
-- engines of version 1 still running during an upgrade. Instead the values
-- get names, and the column a constraint.
--
-- Queries say trellis_kind_on_failure(), not 2. These functions are SQL,
-- IMMUTABLE and a bare constant, so the planner inlines them and folds
-- them into the constant: a plan shows kind <> '2'::smallint, and costs
-- what the literal did. Keep them so (no plpgsql, no lookups). Go maps
-- them to dag.Kind in one place (runtime/store/pgstore/kinds.go).
CREATE FUNCTION trellis_kind_code() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 0::smallint $$;

CREATE FUNCTION trellis_kind_sleep() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 1::smallint $$;

CREATE FUNCTION trellis_kind_on_failure() RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 2::smallint $$;

COMMENT ON COLUMN trellis_tasks.kind IS
    'trellis_kind_code() = 0: runs user code; trellis_kind_sleep() = 1: a durable sleep; trellis_kind_on_failure() = 2: the run''s failure handler';

-- Literals rather than the functions: the check runs on every write of a
-- task, and would otherwise plan the functions each statement. NOT VALID:
-- existing rows are checked by 0003, without stopping writes meanwhile.
ALTER TABLE trellis_tasks ADD CONSTRAINT trellis_tasks_kind_check CHECK (kind IN (0, 1, 2)) NOT VALID;
