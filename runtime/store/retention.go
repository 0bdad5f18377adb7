package store

import (
	"context"
	"fmt"
	"time"
)

// Retention deletes finished runs: the engine's leader calls it to keep
// runs only as long as runtime.Config.Retention says, and operators for
// a one-off purge (trellis runs purge).
type Retention interface {
	// PurgeRuns deletes up to p.Limit runs (every one when Limit is not
	// positive) in status p.Status that finished before p.FinishedBefore
	// and match p's other filters, oldest finished first, each with all
	// its tasks and events, and reports how many it deleted; with DryRun
	// it deletes nothing and counts them all, whatever Limit says.
	//
	// A run that still has live work is never deleted: one with a task
	// QUEUED, RUNNING, SLEEPING or RETRYING, or PENDING in a run that did
	// not complete (the failure handler of a FAILED run, about to be
	// queued; a COMPLETED run's handler waits forever and does not count).
	// So the queue entries, leases and timers of live tasks never lose
	// their task.
	//
	// The runs of one call go atomically: a concurrent reader sees each
	// run whole or not at all. It neither waits for the engine nor makes
	// it wait: runs another transaction holds (a RetryRuns, results being
	// recorded) are skipped, to be purged by a later call, and a RetryRuns
	// that comes second finds the run gone (and leaves it out). Runs are
	// deleted oldest first, so successive calls with a Limit eat a
	// backlog in order.
	PurgeRuns(ctx context.Context, p Purge) (PurgeResult, error)
	// PurgeEvents deletes up to limit events sent with a key (see Events)
	// before sentBefore, oldest first, and reports how many it deleted.
	// Events sent to a run go with the run (PurgeRuns); one sent with a
	// key is kept for the waits that begin later, until it is purged.
	PurgeEvents(ctx context.Context, sentBefore time.Time, limit int) (int, error)
}

// Purge selects the runs PurgeRuns deletes.
type Purge struct {
	// Status is the status of the runs to delete: COMPLETED, FAILED or
	// CANCELLED, one per call (a store reads each in order from an index).
	Status RunStatus
	// FinishedBefore keeps runs that finished at or after it.
	FinishedBefore time.Time
	// Workflow and Tenant, when set, keep runs of other workflows and
	// tenants.
	Workflow string
	Tenant   string
	// Tags, when not empty, keeps runs without every one of these tags
	// (see RunQuery.Tags).
	Tags map[string]string
	// Limit is the most runs one call deletes; not positive means all.
	Limit int
	// DryRun counts the runs instead of deleting them.
	DryRun bool
}

// PurgeResult is what PurgeRuns did.
type PurgeResult struct {
	// Runs is how many runs were deleted (with DryRun: would be).
	Runs int
}

// Check reports a Purge no store accepts: one whose status is not a
// finished one.
func (p Purge) Check() error {
	switch p.Status {
	case RunCompleted, RunFailed, RunCancelled:
		return nil
	}
	return fmt.Errorf("status %q is not a finished status (COMPLETED, FAILED or CANCELLED): %w", p.Status, ErrInvalidData)
}
