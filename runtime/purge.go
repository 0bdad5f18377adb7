package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// PurgeFilter selects the finished runs PurgeRuns deletes. Every field is
// optional.
type PurgeFilter struct {
	// Statuses are the statuses of the runs to delete: COMPLETED, FAILED
	// and CANCELLED (the default: all three).
	Statuses []RunStatus
	// OlderThan is how long ago a run must have finished to be deleted.
	// Zero means the age Config.Retention gives its status (by default 7
	// days for completed and cancelled runs, 30 for failed ones); a
	// status it keeps forever is then left alone.
	OlderThan time.Duration
	// Workflow and Tenant keep only the runs of a workflow, of a tenant.
	Workflow string
	Tenant   string
	// Tags keeps only the runs carrying every one of these tags (see
	// Tags).
	Tags map[string]string
	// Now is when ages are measured from; zero means the engine's clock,
	// now. A caller that counts (DryRun), asks, then deletes passes the
	// same Now to both calls, so that the second deletes what the first
	// counted, not the runs that have aged since too.
	Now time.Time
	// DryRun counts the runs instead of deleting them.
	DryRun bool
}

// Validate reports a filter PurgeRuns refuses, naming the field.
func (f PurgeFilter) Validate() error {
	var errs []error
	for _, s := range f.Statuses {
		switch {
		case s == RunRunning:
			errs = append(errs, fmt.Errorf("status RUNNING: only finished runs are purged: use %s", finishedList()))
		case !slices.Contains(FinishedStatuses(), s):
			errs = append(errs, fmt.Errorf("unknown run status %q: use %s", s, finishedList()))
		}
	}
	if len(f.Tags) > 0 {
		if err := CheckTags(f.Tags); err != nil {
			errs = append(errs, fmt.Errorf("tags: %w", err))
		}
	}
	if f.OlderThan < 0 {
		errs = append(errs, fmt.Errorf("older than %v: give a positive age (or none, for the engine's retention)", f.OlderThan))
	}
	return errors.Join(errs...)
}

func finishedList() string {
	var names []string
	for _, s := range FinishedStatuses() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// PurgeResult is what PurgeRuns deleted, or with DryRun would delete. Its
// JSON is what trellis runs purge -format json prints.
type PurgeResult struct {
	DryRun bool `json:"dryRun"`
	// Now is when the ages were measured from, in UTC.
	Now time.Time `json:"now"`
	// Statuses has an entry per status the filter named, in the order of
	// FinishedStatuses.
	Statuses []PurgeCount `json:"statuses"`
	// Runs is the total over the statuses.
	Runs int `json:"runs"`
}

// PurgeCount is what PurgeRuns did for one status.
type PurgeCount struct {
	Status RunStatus `json:"status"`
	// KeptForever is true when no age was given and Config.Retention
	// keeps runs of this status forever: none was looked for.
	KeptForever bool `json:"keptForever,omitempty"`
	// FinishedBefore is the cutoff: the runs deleted finished before it
	// (Now less their age). Nil when KeptForever.
	FinishedBefore *time.Time `json:"finishedBefore,omitempty"`
	// Runs is how many runs were deleted (with DryRun: would be).
	Runs int `json:"runs"`
}

// PurgeRuns deletes the finished runs f selects, each with its steps'
// outputs and its event log, status by status: what the leader does
// every Retention.Interval for the runs past their retention, and what
// trellis runs purge does. With DryRun it counts them instead.
//
// For each status it deletes Retention.BatchSize runs a statement,
// oldest first, and after each full batch waits as long as the batch
// took before the next, so that a large purge leaves the database to the
// workers half the time. Runs with live work are never deleted (see
// store.Retention); neither are runs locked by a concurrent retry, which
// wins. A filter Validate refuses is an error; on any other error it
// returns what it did so far with the error.
func (e *Engine) PurgeRuns(ctx context.Context, f PurgeFilter) (*PurgeResult, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	now := f.Now
	if now.IsZero() {
		now = e.clock.Now()
	}
	res := &PurgeResult{DryRun: f.DryRun, Now: now.UTC(), Statuses: []PurgeCount{}}
	for _, st := range FinishedStatuses() {
		if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, st) {
			continue
		}
		age := f.OlderThan
		if age == 0 {
			var ok bool
			if age, ok = e.cfg.Retention.Age(st); !ok {
				res.Statuses = append(res.Statuses, PurgeCount{Status: st, KeptForever: true})
				continue
			}
		}
		before := now.Add(-age).UTC()
		n, err := e.purge(ctx, store.Purge{Status: st, FinishedBefore: before, Workflow: f.Workflow, Tenant: f.Tenant, Tags: f.Tags, DryRun: f.DryRun}, nil)
		res.Statuses = append(res.Statuses, PurgeCount{Status: st, FinishedBefore: &before, Runs: n})
		res.Runs += n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}
