package memstore

// Fair queueing across tenants, after Hatchet's block-based queue ids.
// The Postgres store implements the same rule in SQL (schema/0001_init.sql,
// trellis_enqueue), with the same block length; the conformance suite
// checks both.
//
// The ready queue is read in ascending id order. The id space is cut into
// blocks of blockLength ids; every tenant owns one slot in each block (its
// group, a small integer given to it the first time it queues work), and a
// tenant's successive tasks go to successive blocks. Reading ids in order
// therefore takes one task per tenant per block: round robin, with no
// computation at read time.
//
// A tenant's next block is the later of the block after its previous one
// and the frontier: the block being consumed (that of the smallest queued
// id, or the last claimed one when the queue is empty). So a tenant that
// was idle joins at the current block instead of behind another tenant's
// backlog: with tenant B holding 10,000 queued tasks, tenant A's new task
// is claimed right after B's task of the current block.

// Groups are handed out in turn and wrap around once blockLength tenants
// have had one, so the tenants a store meets over its life are unlimited:
// a later tenant shares its group with an earlier one. That costs no
// fairness, since a tenant's block is placed from its own queued tasks and
// the frontier, whatever its group: two tenants sharing a group still get
// one task each per block (per lane), tied on the same id. Postgres does the
// same (schema/0015: the group sequence cycles).

// blockLength is the number of queue ids per block, which is also the
// number of groups.
const blockLength int64 = 1 << 20

// nextBlock returns the block for a tenant's next task, given the tenant's
// previous block (or -1 when it has none) and the frontier.
func nextBlock(previous, frontier int64) int64 {
	if previous+1 > frontier {
		return previous + 1
	}
	return frontier
}

// queueID is the queue id of a task of the tenant with the given group in
// the given block.
func queueID(group, block int64) int64 { return block*blockLength + group }

// blockOf returns the block of a queue id.
func blockOf(id int64) int64 { return id / blockLength }
