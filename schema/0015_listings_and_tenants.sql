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
