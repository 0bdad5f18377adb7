package store

import (
	"context"
	"time"
)

// Pauses keeps the workflows an operator paused (runtime.Engine.PauseWorkflow).
// A pause names a workflow (by name, every version) and a tenant, or every
// tenant (Tenant ""). While a task's workflow is paused for its tenant, no
// claim takes it (ClaimTasks) and Finish hands it off to no worker: it
// stays queued, in its place, until the pause is lifted. Nothing else
// changes: runs are still created and their roots queued, running tasks
// are still recorded, timers still fire (a sleep step still completes,
// since no worker claims it), events still wake waits, cancels still
// cancel.
//
// A pause is exact across processes: once PauseWorkflows returns, no claim
// or hand-off of the paused tasks commits; one that read the pauses before
// it waited for it (on Postgres, PauseWorkflows locks the pauses against
// every reader until it commits).
type Pauses interface {
	// PauseWorkflows pauses workflow for each of tenants, or for every
	// tenant when tenants is empty, stamping new pauses with now; a pause
	// that exists is left as it is. It returns the pauses it made.
	PauseWorkflows(ctx context.Context, workflow string, tenants []string, now time.Time) ([]WorkflowPause, error)
	// ResumeWorkflows lifts the pauses of workflow for each of tenants,
	// or every pause of the workflow (the one for every tenant and each
	// tenant's) when tenants is empty, and signals TasksReady when it
	// lifted one. A tenant's pause lifted while the workflow is paused for
	// every tenant leaves that tenant paused. It returns the pauses it
	// lifted.
	ResumeWorkflows(ctx context.Context, workflow string, tenants []string) ([]WorkflowPause, error)
	// ListPauses returns every pause, by workflow then tenant ("" first),
	// each with the tasks it holds.
	ListPauses(ctx context.Context) ([]WorkflowPause, error)
}

// WorkflowPause is one pause of a workflow (see Pauses), as the store
// keeps it; runtime.WorkflowPause is this type, and its JSON is what
// trellis workflows prints with -format json.
type WorkflowPause struct {
	Workflow string `json:"workflow"`
	// Tenant is the tenant paused, or "" for every tenant.
	Tenant string `json:"tenant"`
	// PausedAt is when it was paused, by the pausing engine's clock.
	PausedAt time.Time `json:"pausedAt"`
	// Queued counts the tasks the pause holds: queued, ready to be
	// claimed but for it (ListPauses only). A task that two pauses hold
	// (its tenant's and every tenant's) counts for the pause of every
	// tenant.
	Queued int `json:"queued"`
}
