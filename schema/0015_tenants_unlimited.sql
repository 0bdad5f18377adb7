-- Tenants are unlimited over a database's life (docs/listings-and-tenants.md).
--
-- Each tenant gets a group, its slot in every block of the ready queue
-- (schema/0001). The group sequence ended at 1,048,575, so after that many
-- distinct tenants no new tenant's task could be queued. Now the sequence
-- wraps, and groups are not unique: a tenant met after the space is used
-- up shares a group with an older one. Sharing a group costs no fairness:
-- a tenant's block is placed from its own queued tasks and the queue's
-- frontier, whatever its group, so two tenants sharing a group still get
-- one task each per round (per lane); they only tie for the order within
-- the round, which claims break by lane. The memory store does the same.

ALTER SEQUENCE trellis_tenant_group CYCLE;

ALTER TABLE trellis_tenants DROP CONSTRAINT trellis_tenants_grp_key;
