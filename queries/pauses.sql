-- name: PausedLock :exec
-- Waits for every transaction that read the pauses (a claim, a hand-off)
-- to end, and holds off every reader until this one ends: a claim that
-- read the pauses before a pause commits has committed before it, and
-- one that reads them after sees it.
LOCK TABLE trellis_paused IN ACCESS EXCLUSIVE MODE;

-- name: PausedInsert :many
-- Pauses a workflow for each tenant ('' for every tenant); returns the
-- pauses made (not those that existed).
INSERT INTO trellis_paused (workflow, tenant, paused_at)
SELECT @workflow::text, unnest(@tenants::text[]), @now::timestamptz
ON CONFLICT (workflow, tenant) DO NOTHING
RETURNING workflow, tenant, paused_at;

-- name: PausedDelete :many
-- Lifts the pauses of a workflow for each tenant, or every pause of it
-- when no tenant is given, and wakes the claimers when it lifted one.
WITH lifted AS (
    DELETE FROM trellis_paused
    WHERE workflow = @workflow::text AND (cardinality(@tenants::text[]) = 0 OR tenant = ANY (@tenants::text[]))
    RETURNING workflow, tenant, paused_at
)
SELECT workflow, tenant, paused_at FROM lifted
WHERE pg_notify(trellis_channel(), 'ready') IS NOT NULL
ORDER BY workflow, tenant COLLATE "C";

-- name: PausedList :many
-- Every pause with the queued tasks it holds: a tenant's pause counts
-- none of the tasks its workflow's pause for every tenant holds.
SELECT p.workflow, p.tenant, p.paused_at,
       (SELECT count(*) FROM trellis_ready q
        WHERE q.workflow = p.workflow
          AND (p.tenant = '' OR q.tenant = p.tenant
               AND NOT EXISTS (SELECT 1 FROM trellis_paused a WHERE a.workflow = p.workflow AND a.tenant = '')))::bigint AS queued
FROM trellis_paused p
ORDER BY p.workflow COLLATE "C", p.tenant COLLATE "C";
