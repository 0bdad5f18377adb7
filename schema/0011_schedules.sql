-- Cron schedules created at run time, through the API (the workflow
-- file's schedules live in its spec). One row per schedule, named within
-- its workflow (by name, not version). Engines that registered the
-- workflow read them every few seconds and fire their ticks; the runs they
-- start carry the idempotency key trellis:schedule:<name>:<tick>, which
-- makes each tick start one run however many engines see it.
CREATE TABLE trellis_schedules (
    workflow   text NOT NULL,
    name       text NOT NULL,
    cron       text NOT NULL,
    -- An IANA time zone name; '' for UTC.
    timezone   text NOT NULL,
    -- json, not jsonb: the input is kept as it was given; PutSchedule
    -- compares it as jsonb.
    input      json NOT NULL,
    tenant     text NOT NULL,
    paused     boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    -- When its settings or paused state last changed: no tick before it
    -- fires.
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (workflow, name)
);
