-- Functions and signatures that no file defines any more, dropped where a
-- database still has them. Applied first, before every file that defines
-- a function. An entry stays as long as a database at some earlier
-- version may hold what it drops (for good, in practice): each costs a
-- catalog lookup when the functions are applied.

-- trellis_enqueue without lanes (schema/0008 kept it for processes of the
-- version before lanes, during that upgrade). Nothing calls it: processes
-- that did cannot run against a schema at 0014 or later, which renamed
-- the run's count of unresolved tasks under them.
DROP FUNCTION IF EXISTS trellis_enqueue(uuid[], smallint[], boolean[], text[], text[]);
