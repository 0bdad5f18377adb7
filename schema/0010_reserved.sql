-- Reserved: version 10 is a migration of another branch (rate limits),
-- written at the same time as 0011. This placeholder keeps the versions
-- without a gap on the branch that adds 0011, and does nothing. Delete it
-- when the two branches merge (the embedded migrations refuse two files
-- of one version, so a merge that keeps both fails its tests at once).
SELECT 1;
