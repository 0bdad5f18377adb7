-- What each worker runs: the workflow versions it registered, which it
-- announces when it starts (store.AnnounceWorker), for operators (trellis
-- workers, the dashboard's workers page). Claims do not read it.

ALTER TABLE trellis_workers ADD COLUMN versions text[] NOT NULL DEFAULT '{}';
