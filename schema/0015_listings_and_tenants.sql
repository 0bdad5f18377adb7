-- Limits lifted (docs/listings-and-tenants.md).
--
-- 1. A listing's input pushdown never fails for one odd run. Inputs are
-- stored as json, which accepts what jsonb refuses: the escape \u0000,
-- and numbers beyond numeric's range. OpsRunsScan compared every scanned
-- input as jsonb, so one such input failed the whole listing. It calls
-- trellis_input_contains instead, which says true when the input cannot
-- be read as jsonb: the run is then handed to the filter itself, which
-- decides (Go reads both). Only rows the other filters kept reach it.

CREATE FUNCTION trellis_input_contains(p_input json, p_docs jsonb[]) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN p_input::jsonb @> ANY (p_docs);
EXCEPTION WHEN untranslatable_character OR invalid_parameter_value OR numeric_value_out_of_range
          OR invalid_text_representation THEN
    RETURN true;
END
$$;

-- 2. Tenants are unlimited over a database's life. Each tenant gets a
-- group, its slot in every block of the ready queue (schema/0001). The
-- group sequence ended at 1,048,575, so after that many distinct tenants
-- no new tenant's task could be queued. Now the sequence wraps, and
-- groups are not unique: a tenant met after the space is used up shares
-- a group with an older one. Sharing a group costs no fairness: a
-- tenant's block is placed from its own queued tasks and the queue's
-- frontier, whatever its group, so two tenants sharing a group still get
-- one task each per round (per lane); they only tie for the order within
-- the round, which claims break by lane. The memory store does the same.

ALTER SEQUENCE trellis_tenant_group CYCLE;

ALTER TABLE trellis_tenants DROP CONSTRAINT trellis_tenants_grp_key;
