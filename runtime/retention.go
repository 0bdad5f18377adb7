package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Retention says how long finished runs are kept. The leader deletes a
// run (with its steps' outputs, errors and event log) once it has been
// finished for longer than the age its status is given, in batches, every
// Interval. A zero field means its default; Config.Retention's zero value
// keeps completed and cancelled runs 7 days and failed runs 30. Runs
// with live work (a failure handler still to run or running) are kept
// until it ends.
//
// Age is measured from the run's end (its FinishedAt) by the engine's
// clock, so on the test kit's virtual clock it passes when the test says.
type Retention struct {
	// Completed is how long a COMPLETED run is kept (default 7 days).
	Completed time.Duration
	// Failed is how long a FAILED run is kept (default 30 days: long
	// enough to look into it and retry it).
	Failed time.Duration
	// Cancelled is how long a CANCELLED run is kept (default 7 days).
	Cancelled time.Duration
	// Events is how long an event sent with a key (Workflow.Send) is
	// kept for the waits that begin after it was sent (default 7 days).
	// Events sent to a run (Workflow.Signal) are kept as long as the run.
	Events time.Duration
	// BatchSize is the most runs one statement deletes (default 1000). A
	// batch holds the locks of its runs, tasks and events until it
	// commits, and the leader pauses after each for as long as it took,
	// so a backlog is deleted without starving the workers' claims.
	BatchSize int
	// Interval is how often the leader purges (default 1 minute).
	Interval time.Duration
}

// KeepForever keeps the runs of a status forever, given as its age in
// Retention. Retention{Completed: KeepForever, Failed: KeepForever,
// Cancelled: KeepForever} turns retention off.
const KeepForever time.Duration = -1

// Retention defaults.
const (
	DefaultKeepCompleted  = 7 * 24 * time.Hour
	DefaultKeepFailed     = 30 * 24 * time.Hour
	DefaultKeepCancelled  = 7 * 24 * time.Hour
	DefaultKeepEvents     = 7 * 24 * time.Hour
	DefaultPurgeBatchSize = 1000
	DefaultPurgeInterval  = time.Minute
)

// minRetention is the shortest age a run can be given: a positive age
// below it is more likely a unit mistake (7 meaning seven days) than a
// wish to delete runs as soon as they end.
const minRetention = time.Minute

// FinishedStatuses are the statuses a run ends in, in the order
// retention handles them.
func FinishedStatuses() []RunStatus { return []RunStatus{RunCompleted, RunFailed, RunCancelled} }

// retentionAge is one finished status's age field, and its default.
type retentionAge struct {
	status RunStatus
	name   string
	age    *time.Duration
	def    time.Duration
}

// ages lists the age field of each finished status, in the order of
// FinishedStatuses.
func (r *Retention) ages() []retentionAge {
	return []retentionAge{
		{RunCompleted, "Completed", &r.Completed, DefaultKeepCompleted},
		{RunFailed, "Failed", &r.Failed, DefaultKeepFailed},
		{RunCancelled, "Cancelled", &r.Cancelled, DefaultKeepCancelled},
	}
}

// Age returns how long runs of status are kept (its field, or the
// default when the field is zero), and false when they are kept forever
// or status is not a finished one.
func (r Retention) Age(status RunStatus) (time.Duration, bool) {
	for _, a := range r.ages() {
		switch {
		case a.status != status:
		case *a.age == 0:
			return a.def, true
		case *a.age < 0:
			return 0, false
		default:
			return *a.age, true
		}
	}
	return 0, false
}

// eventsAge returns how long events sent with a key are kept, and false
// when they are kept forever.
func (r Retention) eventsAge() (time.Duration, bool) {
	switch {
	case r.Events == 0:
		return DefaultKeepEvents, true
	case r.Events < 0:
		return 0, false
	}
	return r.Events, true
}

// setDefaults fills in zero fields and reports the fields that are
// wrong, naming them.
func (r *Retention) setDefaults() error {
	var errs []error
	for _, a := range r.ages() {
		switch {
		case *a.age == 0:
			*a.age = a.def
		case *a.age == KeepForever:
		case *a.age < 0:
			errs = append(errs, fmt.Errorf("runtime.Config: Retention.%s is %v: give a positive age, or runtime.KeepForever to keep those runs", a.name, *a.age))
		case *a.age < minRetention:
			errs = append(errs, fmt.Errorf("runtime.Config: Retention.%s is %v: keep runs at least %v (or runtime.KeepForever)", a.name, *a.age, minRetention))
		}
	}
	switch {
	case r.Events == 0:
		r.Events = DefaultKeepEvents
	case r.Events == KeepForever:
	case r.Events < 0:
		errs = append(errs, fmt.Errorf("runtime.Config: Retention.Events is %v: give a positive age, or runtime.KeepForever to keep events", r.Events))
	case r.Events < minRetention:
		errs = append(errs, fmt.Errorf("runtime.Config: Retention.Events is %v: keep events at least %v (or runtime.KeepForever)", r.Events, minRetention))
	}
	switch {
	case r.BatchSize == 0:
		r.BatchSize = DefaultPurgeBatchSize
	case r.BatchSize < 0:
		errs = append(errs, fmt.Errorf("runtime.Config: Retention.BatchSize is %d: give a positive number of runs (0 means %d)", r.BatchSize, DefaultPurgeBatchSize))
	}
	switch {
	case r.Interval == 0:
		r.Interval = DefaultPurgeInterval
	case r.Interval < 0:
		errs = append(errs, fmt.Errorf("runtime.Config: Retention.Interval is %v: give a positive interval (0 means %v)", r.Interval, DefaultPurgeInterval))
	}
	return errors.Join(errs...)
}

// purge deletes the runs p selects (p.Limit is set here), as PurgeRuns
// does for each status, and returns how many it deleted (with p.DryRun,
// how many it would). It deletes Retention.BatchSize runs a statement,
// oldest first, and after each full batch waits as long as the batch
// took before the next, so that a large purge leaves the database to the
// workers half the time. It stops early, without an error, once goingOn
// (when not nil) returns false, and returns what it deleted until an
// error or ctx's end, with the error.
func (e *Engine) purge(ctx context.Context, p store.Purge, goingOn func() bool) (int, error) {
	if p.DryRun {
		res, err := e.store.PurgeRuns(ctx, p)
		if err != nil {
			return 0, fmt.Errorf("counting %s runs to purge: %w", p.Status, err)
		}
		return res.Runs, nil
	}
	p.Limit = e.cfg.Retention.BatchSize
	total := 0
	for {
		began := e.clock.Now()
		res, err := e.store.PurgeRuns(ctx, p)
		took := e.clock.Now().Sub(began)
		if err != nil {
			return total, fmt.Errorf("purging %s runs: %w", p.Status, err)
		}
		total += res.Runs
		e.metrics.RunsPurged(ctx, p.Status, res.Runs)
		if res.Runs > 0 {
			e.log.Debug("purged a batch of runs", "status", p.Status, "runs", res.Runs, "took", took)
		}
		if res.Runs < p.Limit || (goingOn != nil && !goingOn()) {
			return total, nil
		}
		if err := clock.Sleep(ctx, e.clock, took); err != nil {
			return total, err
		}
	}
}
