-- Workflows an operator paused (Engine.PauseWorkflow): one row per
-- workflow (by name, every version) and tenant, or tenant '' for every
-- tenant. The claim statements and the hand-off of TasksComplete skip the
-- queued tasks a row holds; they read the table only when it has a row
-- (an empty table costs a claim one probe). Pausing locks the table
-- against every reader until it commits, so that no claim that read it
-- before the pause commits after it.
CREATE TABLE trellis_paused (
    workflow  text NOT NULL,
    tenant    text NOT NULL,
    paused_at timestamptz NOT NULL,
    PRIMARY KEY (workflow, tenant)
);
