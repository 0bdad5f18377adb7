// Package ops is the operations API of Trellis: what an operator reads of
// a store across workflows, presented. The trellis CLI (trellis runs,
// workers, queue, workflows, schedules) and the dashboard are built on
// it: every listing is a store query (store.Ops) made cheap by the
// store's indexes, and every type here marshals to the JSON the CLI
// prints with -format json.
//
// What ops adds to the engine is reading, not acting: run listings with
// Where filters and keyset pages, a run's detail (its steps, with step
// names and sensitive values redacted), its graph, the workers, the
// queue, activity, the stored workflow versions with their schedules of
// every source, where running runs are (InProgress) and the runs a run's
// steps started (ChildRuns), and the outcome per run of a bulk Cancel,
// Retry or Rerun. Every action has one home, the engine (Admin.Engine):
// Engine.CancelRun, RetryRun and RerunRun (which Cancel, Retry and Rerun
// call a batch at a time), Events, StuckRuns, PurgeRuns, SendEvent,
// PauseSchedule, ResumeSchedule and DeleteSchedule, and PauseWorkflow and
// ResumeWorkflow; Trigger starts a run by workflow name through
// Workflow.Trigger. Records the store returns (workers, queue groups,
// activity) are the store's own types, under ops names.
//
// An Admin wraps an engine, which need not be started (an engine that is
// not started claims nothing and does not lead):
//
//	engine, err := runtime.New(runtime.Config{Store: pgstore.New(pool)})
//	admin := ops.New(engine)
//	page, err := admin.ListRuns(ctx, ops.RunFilter{Statuses: []runtime.RunStatus{runtime.RunFailed}})
//	for _, r := range page.Runs { ... }           // newest first
//	next, err := admin.ListRuns(ctx, ops.RunFilter{Statuses: ..., After: page.Next})
//	events, err := admin.Engine().Events(ctx, page.Runs[0].ID)
//
// Step names come from the run's stored workflow version, so runs of any
// version are shown as they were defined, whatever code this process has.
package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Admin reads a store for operators: listings (with Where filters), a
// run's detail, workers, the queue, activity, schedules of every source,
// and the outcome per run of a bulk cancel, retry or rerun. Every action
// on a run or a schedule is implemented once, by the engine
// (Admin.Engine): Cancel, Retry and Rerun call it, a batch at a time. It is safe for concurrent
// use.
type Admin struct {
	engine *runtime.Engine
	store  store.Store
	cfg    Config
}

// Defaults of Config.
const (
	// DefaultWhereBudget is the CEL cost one page of a listing under a
	// Where filter may spend evaluating the filter: room for 20,000 runs
	// (a page's most) at 500 cost units each, where a comparison of two
	// input fields costs about 5.
	DefaultWhereBudget uint64 = 10_000_000
	// DefaultWhereTimeout is how long one page of a listing under a Where
	// filter may take reading and evaluating runs.
	DefaultWhereTimeout = 10 * time.Second
)

// Config bounds the work of an Admin's requests. A zero field takes its
// default.
type Config struct {
	// WhereBudget is the total CEL cost (cel-go's cost units, summed over
	// the runs evaluated) that one page of a listing under a Where filter
	// may spend: DefaultWhereBudget when zero. A single evaluation is
	// bounded on its own too, at 1,000,000.
	WhereBudget uint64
	// WhereTimeout is how long, on the engine's clock, one page of a
	// listing under a Where filter may read and evaluate runs:
	// DefaultWhereTimeout when zero. Checked between runs and between
	// store reads, so a page may overrun it by one evaluation and one
	// read.
	WhereTimeout time.Duration
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.WhereBudget == 0 {
		c.WhereBudget = DefaultWhereBudget
	}
	if c.WhereTimeout == 0 {
		c.WhereTimeout = DefaultWhereTimeout
	}
	return c
}

// New returns an Admin working through engine: its store, its clock (for
// what is stale or waiting), and its CancelRun and RetryRun, with the
// default Config.
func New(engine *runtime.Engine) *Admin {
	return &Admin{engine: engine, store: engine.Store(), cfg: Config{}.withDefaults()}
}

// NewWithConfig is New with cfg's bounds. A negative timeout is an error.
func NewWithConfig(engine *runtime.Engine, cfg Config) (*Admin, error) {
	if cfg.WhereTimeout < 0 {
		return nil, fmt.Errorf("where timeout %v: give a positive duration (or zero, for the default %v)", cfg.WhereTimeout, DefaultWhereTimeout)
	}
	a := New(engine)
	a.cfg = cfg.withDefaults()
	return a, nil
}

// Engine returns the engine the Admin works through. Its methods are the
// one home of each operator action: CancelRun, RetryRun, Events,
// StuckRuns, PurgeRuns, SendEvent, PauseSchedule, ResumeSchedule and
// DeleteSchedule, and PauseWorkflow and ResumeWorkflow; the trellis CLI and
// the dashboard call them there.
func (a *Admin) Engine() *runtime.Engine { return a.engine }

// stepNames returns the step names of a workflow version by step index,
// or nil when the version cannot be loaded (the caller then names steps by
// index).
func (a *Admin) stepNames(ctx context.Context, version string) []string {
	def, err := a.engine.Definition(ctx, version)
	if err != nil {
		return nil
	}
	return def.StepNames()
}

// stepName names step i of names, or "step i" when it is unknown.
func stepName(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("step %d", i)
}

// timeOrNil is nil for the zero time, so that JSON omits it.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
