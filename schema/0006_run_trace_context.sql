-- The trace context of the code that triggered a run (W3C Trace Context
-- headers, as the engine writes them), so that the run's steps continue
-- the trigger's trace in whichever process executes them. NULL when the
-- triggering engine traced nothing. A nullable column without a default
-- is added without rewriting the table, so a live system keeps writing
-- while it upgrades.
ALTER TABLE trellis_runs ADD COLUMN trace_context text;
