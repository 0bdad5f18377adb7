-- Tags on runs (store.NewRun.Tags): string keys and values a run is given
-- when triggered, and inherits from the run whose step started it.
--
-- tags is NULL for a run without tags, so that runs that use none cost
-- nothing: no index entry, no bytes in the row.
--
-- trellis_runs_tags answers the listings' tag filters (store.RunQuery.Tags,
-- `tags @> '{"customer":"acme"}'`): jsonb_path_ops indexes each key and
-- value pair as one hash, the smallest GIN index that serves containment,
-- which is the only operator the filters use. Partial on tags IS NOT
-- NULL: a run without tags has no entry. Tags never change once a run is
-- written, so the index adds no cost to a run's updates.
ALTER TABLE trellis_runs ADD COLUMN tags jsonb;

CREATE INDEX trellis_runs_tags ON trellis_runs USING gin (tags jsonb_path_ops)
    WHERE tags IS NOT NULL;
