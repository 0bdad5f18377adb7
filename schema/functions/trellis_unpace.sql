-- trellis_unpace forgets a task that ended while put off by trellis_pace
-- (QUEUED with a timer for its turn): its run was cancelled, or its
-- parent run's. A trigger, as trellis_release is, so that it holds
-- whichever path cancels the task; every other update of a task's status
-- costs the check of its WHEN.

CREATE OR REPLACE FUNCTION trellis_unpace() RETURNS trigger
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM trellis_paced WHERE run_id = NEW.run_id AND step = NEW.step;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER trellis_unpace AFTER UPDATE OF status ON trellis_tasks
FOR EACH ROW
WHEN (NEW.rate_key IS NOT NULL
      AND NEW.status IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED')
      AND OLD.status = 'QUEUED')
EXECUTE FUNCTION trellis_unpace();
