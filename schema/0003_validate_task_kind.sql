-- Checks the existing tasks against 0002's kind constraint. A migration of
-- its own so that it commits apart from 0002: ADD CONSTRAINT holds a lock
-- that stops every read and write of trellis_tasks until its transaction
-- ends, while VALIDATE scans the whole task history under one that lets
-- engines carry on.
ALTER TABLE trellis_tasks VALIDATE CONSTRAINT trellis_tasks_kind_check;
