// Package ops is the operations API of Trellis: what an operator sees of a
// store and does to its runs. The trellis CLI (trellis runs, workers,
// queue, workflows) is built on it, and a dashboard can be: every listing
// is a store query (store.Ops) made cheap by the store's indexes, and
// every type here marshals to the JSON the CLI prints with -format json.
//
// An Admin wraps an engine, which need not be started (an engine that is
// not started claims nothing and does not lead):
//
//	engine, err := runtime.New(runtime.Config{Store: pgstore.New(pool)})
//	admin := ops.New(engine)
//	page, err := admin.ListRuns(ctx, ops.RunFilter{Statuses: []runtime.RunStatus{runtime.RunFailed}})
//	for _, r := range page.Runs { ... }           // newest first
//	next, err := admin.ListRuns(ctx, ops.RunFilter{Statuses: ..., After: page.Next})
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

// Admin reads a store for operators, and cancels, retries and purges its
// runs.
// It is safe for concurrent use.
type Admin struct {
	engine *runtime.Engine
	store  store.Store
}

// New returns an Admin working through engine: its store, its clock (for
// what is stale or waiting), and its CancelRun and RetryRun.
func New(engine *runtime.Engine) *Admin {
	return &Admin{engine: engine, store: engine.Store()}
}

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
